// shoal._shoal: libshoal's public API for Python (pybind11). The package `shoal` re-exports it; see
// python/shoal/__init__.py for what users import.
#include <cmath>
#include <stdexcept>
#include <string>

#include "bindings.hpp"
#include "python_callbacks.hpp"
#include "shoal/version.hpp"

namespace shoal::python {

std::chrono::milliseconds milliseconds_from(double seconds, const char* what) {
  if (!std::isfinite(seconds) || seconds < 0 || seconds > 1e9) {
    throw py::value_error(std::string(what) + " must be a non-negative number of seconds, not " +
                          std::to_string(seconds));
  }
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(seconds * 1000.0)));
}

}  // namespace shoal::python

PYBIND11_MODULE(_shoal, m) {
  m.doc() = "libshoal for Python: sessions, communicators and in-memory checkpoints (see the shoal package)";
  shoal::python::bind_errors(m);
  shoal::python::bind_work(m);
  shoal::python::bind_communicator(m);
  shoal::python::bind_session(m);
  shoal::python::bind_checkpoints(m);
  shoal::python::bind_store(m);
  shoal::python::bind_health(m);
  shoal::python::bind_settle(m);
  shoal::python::register_callback_gate(m);
  m.attr("__version__") = std::string(shoal::build::version());
  m.attr("git_revision") = std::string(shoal::build::git_revision());
}

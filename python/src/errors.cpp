// shoal::Error, Timeout and ViewChanged as Python exceptions with the same messages:
// shoal.Error (a RuntimeError), shoal.Timeout and shoal.ViewChanged (both shoal.Error; ViewChanged
// carries the epoch that changed as `.epoch`).
#include "bindings.hpp"
#include "shoal/errors.hpp"

namespace shoal::python {

namespace {

// The Python exception types, set once by bind_errors.
py::handle error_type, timeout_type, view_changed_type, version_refused_type;

}  // namespace

bool is_version_refused(const py::error_already_set& e) { return e.matches(version_refused_type); }

py::object exception_object(std::exception_ptr p) {
  try {
    std::rethrow_exception(p);
  } catch (const ViewChanged& e) {
    py::object exc = py::reinterpret_borrow<py::object>(view_changed_type)(e.what());
    exc.attr("epoch") = e.epoch();
    return exc;
  } catch (const Timeout& e) {
    return py::reinterpret_borrow<py::object>(timeout_type)(e.what());
  } catch (const Error& e) {
    return py::reinterpret_borrow<py::object>(error_type)(e.what());
  } catch (const std::exception& e) {
    return py::reinterpret_borrow<py::object>(PyExc_RuntimeError)(e.what());
  } catch (...) {
    return py::reinterpret_borrow<py::object>(PyExc_RuntimeError)("an unknown C++ exception");
  }
}

void bind_errors(py::module_& m) {
  static py::exception<Error> error(m, "Error", PyExc_RuntimeError);
  static py::exception<Timeout> timeout(m, "Timeout", error.ptr());
  static py::exception<ViewChanged> view_changed(m, "ViewChanged", error.ptr());
  static py::exception<VersionRefused> version_refused(m, "VersionRefused", error.ptr());
  error_type = error.ptr();
  timeout_type = timeout.ptr();
  view_changed_type = view_changed.ptr();
  version_refused_type = version_refused.ptr();
  version_refused.doc() =
      "Raised by a restore placer about the copy of a checkpoint it was shown: its content is not to be trusted. "
      "The restore tries the next holder's copy, then an older step.";
  error.doc() = "A libshoal call failed; the message says what to change.";
  timeout.doc() = "A rendezvous, view wait or collective did not complete in time.";
  view_changed.doc() =
      "The view of the communicator's epoch changed (a member failed, left or joined): rebuild and retry. "
      "`.epoch` is the epoch that changed.";
  // Most derived first: a ViewChanged is also an Error.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ViewChanged& e) {
      py::object exc = py::reinterpret_borrow<py::object>(view_changed.ptr())(e.what());
      exc.attr("epoch") = e.epoch();
      PyErr_SetObject(view_changed.ptr(), exc.ptr());
    } catch (const VersionRefused& e) {
      PyErr_SetString(version_refused.ptr(), e.what());
    } catch (const Timeout& e) {
      PyErr_SetString(timeout.ptr(), e.what());
    } catch (const Error& e) {
      PyErr_SetString(error.ptr(), e.what());
    }
  });
}

}  // namespace shoal::python

// The gate between libshoal's threads and the Python interpreter (python_callbacks.hpp).
#include "python_callbacks.hpp"

#include "bindings.hpp"

#include <atomic>
#include <condition_variable>
#include <mutex>

namespace shoal::python {
namespace {

struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  int inside = 0;
  bool closed = false;
};

Gate& gate() {
  static auto* g = new Gate;  // never destroyed: threads may pass it during the process's exit
  return *g;
}

}  // namespace

CallbackGate::Pass::Pass() {
  auto& g = gate();
  std::lock_guard lock(g.mu);
  open_ = !g.closed && !_Py_IsFinalizing();
  if (open_) ++g.inside;
}

CallbackGate::Pass::~Pass() {
  if (!open_) return;
  auto& g = gate();
  std::lock_guard lock(g.mu);
  if (--g.inside == 0) g.cv.notify_all();
}

bool CallbackGate::close(std::chrono::milliseconds timeout) {
  auto& g = gate();
  py::gil_scoped_release release;  // a callback inside may be waiting for the GIL
  std::unique_lock lock(g.mu);
  g.closed = true;
  return g.cv.wait_for(lock, timeout, [&] { return g.inside == 0; });
}

bool CallbackGate::closed() {
  auto& g = gate();
  std::lock_guard lock(g.mu);
  return g.closed;
}

void register_callback_gate(py::module_& m) {
  m.def(
      "_close_callbacks",
      [](double seconds) { return CallbackGate::close(milliseconds_from(seconds, "seconds")); },
      py::arg("seconds") = 5.0,
      "At exit: no more callbacks from shoal's threads; waits for those running (True when none is left).");
  py::module_::import("atexit").attr("register")(m.attr("_close_callbacks"));
}

std::shared_ptr<py::function> held_callback(py::function f) {
  return std::shared_ptr<py::function>(new py::function(std::move(f)), [](py::function* p) {
    CallbackGate::Pass pass;
    if (!pass.open()) return;  // leaving: the process takes it
    py::gil_scoped_acquire gil;
    delete p;
  });
}

}  // namespace shoal::python

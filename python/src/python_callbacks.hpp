// Python callbacks from libshoal's own threads (a communicator's work queue, the agent's view changes),
// and the interpreter's exit. A thread of ours that takes the GIL once the interpreter is finalizing is
// ended by CPython (pthread_exit), and that unwind through C++ frames aborts the process ("terminate
// called ..."): a program that ended with an exception while a collective was completing died with
// SIGABRT instead of its traceback's exit status. So every such callback passes a gate that the module
// closes at exit (an atexit handler: before finalization), and that exit waits, with a deadline, for the
// callbacks already running.
#pragma once

#include <pybind11/pybind11.h>

#include <chrono>
#include <memory>

namespace shoal::python {

namespace py = pybind11;

class CallbackGate {
 public:
  // A callback's pass: open() is false once the interpreter is leaving (the callback must not touch Python).
  class Pass {
   public:
    Pass();
    ~Pass();
    Pass(const Pass&) = delete;
    Pass& operator=(const Pass&) = delete;
    bool open() const { return open_; }

   private:
    bool open_;
  };

  // Refuses new passes and waits up to `timeout` for the passes out (call with the GIL held: it is released
  // while waiting). True when none is left.
  static bool close(std::chrono::milliseconds timeout);
  static bool closed();
};

// Registers the gate's close with Python's atexit (module initialisation).
void register_callback_gate(py::module_& m);

// A Python callable held by C++ callbacks: its last reference, dropped on any thread, releases it with the
// GIL, or leaks it once the interpreter is leaving (it goes with the process).
std::shared_ptr<py::function> held_callback(py::function f);

}  // namespace shoal::python

// The Python object behind shoal.Session: libshoal's session, and whether Python callbacks may still run.
#pragma once

#include <memory>

#include "bindings.hpp"
#include "shoal/session.hpp"

namespace shoal::python {

// The session and the Python callbacks it holds; dropping the callbacks at leave() keeps the agent's
// thread from calling into an interpreter that is shutting down.
struct PySession {
  std::unique_ptr<Session> session;
  std::shared_ptr<bool> alive = std::make_shared<bool>(true);

  Session& get() const {
    if (!session) throw Error("the session has left");
    return *session;
  }
  void leave() {
    if (!session) return;
    *alive = false;
    py::gil_scoped_release release;
    session->leave();
  }
  // Joining the agent's threads must not hold the GIL: a callback may be waiting for it.
  ~PySession() {
    if (!session) return;
    *alive = false;
    py::gil_scoped_release release;
    session.reset();
  }
};

}  // namespace shoal::python

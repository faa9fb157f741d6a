// CollectiveRunner: runs a communicator's collectives on a worker thread of its own, so that abort()
// releases the calling (trainer) thread at once, whatever the library underneath does. Debian's Gloo
// does not always wake a waiting operation when its sockets are shut down (a rank blocked in
// UnboundBuffer::waitSend of an allreduce stayed blocked for the full op timeout after its own abort),
// and a trainer that hangs there is the failure shoal exists to prevent.
//
// Tasks must own everything they touch (copies of buffers, shared_ptrs to the context): after a
// cancel the worker may still be inside the library until its timeout, while the caller has moved on.
#pragma once

#include <functional>
#include <memory>

namespace shoal::comm {

class CollectiveRunner {
 public:
  CollectiveRunner();
  // Joins an idle worker; detaches one still stuck in a cancelled task (it exits when the task returns).
  ~CollectiveRunner();
  CollectiveRunner(const CollectiveRunner&) = delete;
  CollectiveRunner& operator=(const CollectiveRunner&) = delete;

  // Runs `task` on the worker and waits. Returns true when it finished (rethrowing what it threw), false
  // when cancel() was called first. One task at a time; after a cancel every run() returns false at once.
  bool run(std::function<void()> task);
  // From any thread: a waiting run() returns false now.
  void cancel();

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace shoal::comm

// WorkQueue: the thread on which a communicator runs its submitted operations, one at a time and in
// submission order, and the Work handles it completes. The thread is detached and owns the queue's
// state, so a communicator whose last reference goes with a finished task (on that very thread) is
// destroyed without joining anything; each queued task holds its communicator alive until it ran.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "shoal/work.hpp"

namespace shoal::detail {

// A Work that the queue completes.
class QueuedWork final : public Work {
 public:
  bool done() const override;
  bool wait_for(std::chrono::milliseconds timeout) override;
  std::exception_ptr error() const override;
  void on_done(std::function<void(std::exception_ptr)> callback) override;

  // Calls the callbacks with `error` (null: success), on the calling thread, then marks it finished.
  void finish(std::exception_ptr error);

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::exception_ptr error_;
  std::vector<std::function<void(std::exception_ptr)>> callbacks_;
};

class WorkQueue {
 public:
  WorkQueue();
  // Tells the thread to leave once the queue is empty; never blocks.
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Queues `task` behind every earlier one; the returned Work finishes with what it threw.
  std::shared_ptr<Work> push(std::function<void()> task);

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace shoal::detail

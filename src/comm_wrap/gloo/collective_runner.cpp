// The collective worker thread and the hand-off between it and the caller.
#include "comm_wrap/gloo/collective_runner.hpp"

#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

namespace shoal::comm {

struct CollectiveRunner::State {
  std::mutex mu;
  std::condition_variable cv;
  std::function<void()> task;  // set: a task is waiting for the worker
  bool busy = false;           // the worker is inside a task
  bool done = false;           // the last task finished
  bool cancelled = false;
  bool stop = false;
  std::exception_ptr error;
};

namespace {

void work(const std::shared_ptr<CollectiveRunner::State>& s) {
  std::unique_lock lock(s->mu);
  while (true) {
    s->cv.wait(lock, [&] { return s->stop || s->task; });
    if (!s->task) return;
    auto task = std::move(s->task);
    s->task = nullptr;
    s->busy = true;
    lock.unlock();
    std::exception_ptr error;
    try {
      task();
    } catch (...) {
      error = std::current_exception();
    }
    task = nullptr;  // release what the task owned before anyone is told
    lock.lock();
    s->busy = false;
    s->done = true;
    s->error = error;
    s->cv.notify_all();
    if (s->stop) return;
  }
}

}  // namespace

CollectiveRunner::CollectiveRunner() : state_(std::make_shared<State>()) {
  std::thread([s = state_] { work(s); }).detach();
}

CollectiveRunner::~CollectiveRunner() {
  // The worker is detached from the start and holds the state itself: stopping it is all there is to
  // do, and a worker stuck in a cancelled task leaves when the task returns.
  std::lock_guard lock(state_->mu);
  state_->stop = true;
  state_->cv.notify_all();
}

bool CollectiveRunner::run(std::function<void()> task) {
  std::unique_lock lock(state_->mu);
  if (state_->cancelled) return false;
  state_->task = std::move(task);
  state_->done = false;
  state_->error = nullptr;
  state_->cv.notify_all();
  state_->cv.wait(lock, [&] { return state_->done || state_->cancelled; });
  if (!state_->done) return false;
  if (state_->error) {
    auto error = state_->error;
    state_->error = nullptr;
    std::rethrow_exception(error);
  }
  return true;
}

void CollectiveRunner::cancel() {
  std::lock_guard lock(state_->mu);
  state_->cancelled = true;
  state_->cv.notify_all();
}

}  // namespace shoal::comm

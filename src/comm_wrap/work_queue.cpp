// The queue's thread and the Work handles it completes.
#include "comm_wrap/work_queue.hpp"

#include <thread>

#include "base/log.hpp"

namespace shoal::detail {

bool QueuedWork::done() const {
  std::lock_guard lock(mu_);
  return done_;
}

bool QueuedWork::wait_for(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return done_; })) return false;
  if (error_) std::rethrow_exception(error_);
  return true;
}

std::exception_ptr QueuedWork::error() const {
  std::lock_guard lock(mu_);
  return done_ ? error_ : nullptr;
}

void QueuedWork::on_done(std::function<void(std::exception_ptr)> callback) {
  std::unique_lock lock(mu_);
  if (!done_) {
    callbacks_.push_back(std::move(callback));
    return;
  }
  const auto error = error_;
  lock.unlock();
  callback(error);
}

void QueuedWork::finish(std::exception_ptr error) {
  // The callbacks run before wait() returns, so that what they do (a copy back into the caller's tensor)
  // is done when the caller wakes; one registered while they run joins them.
  std::unique_lock lock(mu_);
  error_ = error;
  while (!callbacks_.empty()) {
    std::vector<std::function<void(std::exception_ptr)>> callbacks;
    callbacks.swap(callbacks_);
    lock.unlock();
    for (auto& cb : callbacks) {
      try {
        cb(error);
      } catch (const std::exception& e) {
        log::get(log::Component::comm).warn("a Work's completion callback threw: {}", e.what());
      } catch (...) {
        log::get(log::Component::comm).warn("a Work's completion callback threw a non-standard exception");
      }
    }
    lock.lock();
  }
  done_ = true;
  lock.unlock();
  cv_.notify_all();
}

struct WorkQueue::State {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::pair<std::function<void()>, std::shared_ptr<QueuedWork>>> items;
  bool stop = false;
};

namespace {

void drain(const std::shared_ptr<WorkQueue::State>& s) {
  std::unique_lock lock(s->mu);
  for (;;) {
    s->cv.wait(lock, [&] { return s->stop || !s->items.empty(); });
    if (s->items.empty()) return;  // stopped, and nothing left to run
    auto [task, work] = std::move(s->items.front());
    s->items.pop_front();
    lock.unlock();
    std::exception_ptr error;
    try {
      task();
    } catch (...) {
      error = std::current_exception();
    }
    // What the task held (its communicator among it) goes before anyone hears of the result, so a
    // caller that drops the communicator after wait() does not find it alive a moment longer.
    task = nullptr;
    work->finish(error);
    work.reset();
    lock.lock();
  }
}

}  // namespace

WorkQueue::WorkQueue() : state_(std::make_shared<State>()) {
  std::thread([s = state_] { drain(s); }).detach();
}

WorkQueue::~WorkQueue() {
  std::lock_guard lock(state_->mu);
  state_->stop = true;
  state_->cv.notify_all();
}

std::shared_ptr<Work> WorkQueue::push(std::function<void()> task) {
  auto work = std::make_shared<QueuedWork>();
  {
    std::lock_guard lock(state_->mu);
    state_->items.emplace_back(std::move(task), work);
  }
  state_->cv.notify_all();
  return work;
}

}  // namespace shoal::detail

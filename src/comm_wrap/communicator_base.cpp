// What every communicator shares: submitted work on its own thread (detail::WorkQueue), and the refusal
// of operations a backend does not have.
#include <string>

#include "comm_wrap/communicator.hpp"
#include "comm_wrap/work_queue.hpp"

namespace shoal {

void Work::wait() {
  while (!wait_for(std::chrono::hours(24))) {
  }
}

Communicator::~Communicator() = default;

namespace {

[[noreturn]] void lacks(const Communicator& c, const char* what) {
  throw Error(std::string(c.backend()) + " backend: no " + what + " in this build");
}

}  // namespace

void Communicator::reduce_scatter(const void*, void*, size_t, DataType, ReduceOp) { lacks(*this, "reduce_scatter"); }
void Communicator::all_to_all(const void*, void*, size_t) { lacks(*this, "all_to_all"); }
void Communicator::gather(const void*, void*, size_t, int) { lacks(*this, "gather"); }
void Communicator::scatter(const void*, void*, size_t, int) { lacks(*this, "scatter"); }
void Communicator::send(const void*, size_t, int, uint32_t) { lacks(*this, "send"); }
void Communicator::recv(void*, size_t, int, uint32_t) { lacks(*this, "recv"); }

std::shared_ptr<Work> Communicator::submit(std::function<void(Communicator&)> op) {
  return submit(std::move(op), nullptr);
}

std::shared_ptr<Work> Communicator::submit(std::function<void(Communicator&)> op, void* after_cuda_stream) {
  std::shared_ptr<Communicator> self = weak_from_this().lock();
  if (!self) {
    throw Error("Communicator::submit needs a communicator owned by a std::shared_ptr (sessions hand them out so)");
  }
  // The mark is taken now, on the caller's thread, so that the operation follows exactly the GPU work the
  // caller queued before submitting it.
  std::shared_ptr<void> mark = after_cuda_stream != nullptr ? stream_mark(after_cuda_stream) : nullptr;
  std::lock_guard lock(queue_mu_);
  if (!queue_) queue_ = std::make_shared<detail::WorkQueue>();
  return queue_->push([self = std::move(self), op = std::move(op), mark = std::move(mark)] {
    if (mark) self->wait_stream_mark(mark);
    op(*self);
  });
}

std::shared_ptr<Work> Communicator::send_async(const void* buf, size_t bytes, int peer, uint32_t tag) {
  return submit([=](Communicator& c) { c.send(buf, bytes, peer, tag); });
}

std::shared_ptr<Work> Communicator::recv_async(void* buf, size_t bytes, int peer, uint32_t tag) {
  return submit([=](Communicator& c) { c.recv(buf, bytes, peer, tag); });
}

}  // namespace shoal

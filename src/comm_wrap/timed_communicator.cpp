// The clock around a backend's collectives.
#include "comm_wrap/timed_communicator.hpp"

#include <chrono>

namespace shoal::comm {

template <class Call>
void TimedCommunicator::timed(const Call& call) {
  const auto start = std::chrono::steady_clock::now();
  struct AddOnExit {
    TimedCommunicator& self;
    std::chrono::steady_clock::time_point start;
    ~AddOnExit() {
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
      self.waited_ns_.fetch_add(static_cast<uint64_t>(ns.count()), std::memory_order_relaxed);
    }
  } add{*this, start};
  call();
}

void TimedCommunicator::allreduce(void* buf, size_t count, DataType type, ReduceOp op) {
  timed([&] { backend_->allreduce(buf, count, type, op); });
}

void TimedCommunicator::broadcast(void* buf, size_t bytes, int root) {
  timed([&] { backend_->broadcast(buf, bytes, root); });
}

void TimedCommunicator::allgather(const void* in, void* out, size_t bytes_per_rank) {
  timed([&] { backend_->allgather(in, out, bytes_per_rank); });
}

void TimedCommunicator::barrier() {
  timed([&] { backend_->barrier(); });
}

void TimedCommunicator::allreduce_in_place(void* buf, size_t count, DataType type, ReduceOp op,
                                           std::shared_ptr<void> keep) {
  timed([&] { backend_->allreduce_in_place(buf, count, type, op, std::move(keep)); });
}

void TimedCommunicator::reduce_scatter(const void* in, void* out, size_t count, DataType type, ReduceOp op) {
  timed([&] { backend_->reduce_scatter(in, out, count, type, op); });
}

void TimedCommunicator::all_to_all(const void* in, void* out, size_t bytes_per_rank) {
  timed([&] { backend_->all_to_all(in, out, bytes_per_rank); });
}

void TimedCommunicator::gather(const void* in, void* out, size_t bytes_per_rank, int root) {
  timed([&] { backend_->gather(in, out, bytes_per_rank, root); });
}

void TimedCommunicator::scatter(const void* in, void* out, size_t bytes_per_rank, int root) {
  timed([&] { backend_->scatter(in, out, bytes_per_rank, root); });
}

void TimedCommunicator::send(const void* buf, size_t bytes, int peer, uint32_t tag) {
  timed([&] { backend_->send(buf, bytes, peer, tag); });
}

void TimedCommunicator::recv(void* buf, size_t bytes, int peer, uint32_t tag) {
  timed([&] { backend_->recv(buf, bytes, peer, tag); });
}

Communicator* backend_of(Communicator* comm) {
  auto* timed = dynamic_cast<TimedCommunicator*>(comm);
  return timed ? &timed->inner() : comm;
}

}  // namespace shoal::comm

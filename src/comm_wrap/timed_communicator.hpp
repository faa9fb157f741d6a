// TimedCommunicator: a backend's communicator with a clock on its collectives. Every call forwards to the
// backend; the time spent inside the blocking collectives and point-to-point calls (monotonic clock, whether the
// call returns or throws) adds up in waited_ns(), which the elastic loop reads around each step to split
// it into compute (outside collectives) and wait (inside them). Sessions hand trainers this wrapper.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "comm_wrap/communicator.hpp"

namespace shoal::comm {

class TimedCommunicator final : public Communicator {
 public:
  explicit TimedCommunicator(std::shared_ptr<Communicator> backend) : backend_(std::move(backend)) {}

  // Nanoseconds spent inside collectives since construction (any thread's calls).
  uint64_t waited_ns() const { return waited_ns_.load(std::memory_order_relaxed); }
  // The backend, for what needs its own type (NCCL's shrink).
  Communicator& inner() { return *backend_; }

  int rank() const override { return backend_->rank(); }
  int world_size() const override { return backend_->world_size(); }
  uint64_t epoch() const override { return backend_->epoch(); }
  const char* backend() const override { return backend_->backend(); }
  void allreduce(void* buf, size_t count, DataType type, ReduceOp op) override;
  void broadcast(void* buf, size_t bytes, int root) override;
  void allgather(const void* in, void* out, size_t bytes_per_rank) override;
  void barrier() override;
  void allreduce_in_place(void* buf, size_t count, DataType type, ReduceOp op, std::shared_ptr<void> keep) override;
  void reduce_scatter(const void* in, void* out, size_t count, DataType type, ReduceOp op) override;
  void all_to_all(const void* in, void* out, size_t bytes_per_rank) override;
  void gather(const void* in, void* out, size_t bytes_per_rank, int root) override;
  void scatter(const void* in, void* out, size_t bytes_per_rank, int root) override;
  void send(const void* buf, size_t bytes, int peer, uint32_t tag) override;
  void recv(void* buf, size_t bytes, int peer, uint32_t tag) override;
  // Posted by the backend (not timed: the wait happens on the backend's thread).
  std::shared_ptr<Work> send_async(const void* buf, size_t bytes, int peer, uint32_t tag) override {
    return backend_->send_async(buf, bytes, peer, tag);
  }
  std::shared_ptr<Work> recv_async(void* buf, size_t bytes, int peer, uint32_t tag) override {
    return backend_->recv_async(buf, bytes, peer, tag);
  }
  std::shared_ptr<void> stream_mark(void* cuda_stream) override { return backend_->stream_mark(cuda_stream); }
  void wait_stream_mark(const std::shared_ptr<void>& mark) override { backend_->wait_stream_mark(mark); }
  void abort(const std::string& why) override { backend_->abort(why); }
  bool aborted() const override { return backend_->aborted(); }
  void abort_after(const std::string& why, std::chrono::milliseconds grace) override {
    backend_->abort_after(why, grace);
  }

  using Communicator::allgather;
  using Communicator::allreduce;
  using Communicator::broadcast;

 private:
  template <class Call>
  void timed(const Call& call);

  std::shared_ptr<Communicator> backend_;
  std::atomic<uint64_t> waited_ns_{0};
};

// The backend of `comm` when it is a TimedCommunicator, else `comm` itself.
Communicator* backend_of(Communicator* comm);

}  // namespace shoal::comm

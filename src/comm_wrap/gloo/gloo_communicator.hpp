// GlooCommunicator: Gloo's collectives behind shoal's interface, with an abort that wakes a collective
// blocked on another thread (pair_sockets.hpp says how). Private to the Gloo backend: communicator.cpp
// holds the original collectives and the factory, collectives_more.cpp reduce_scatter, all_to_all,
// gather and scatter, point_to_point.cpp send and receive.
#pragma once

#include <gloo/allreduce.h>
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/unbound_buffer.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "comm_wrap/gloo/collective_runner.hpp"
#include "comm_wrap/gloo/communicator.hpp"
#include "comm_wrap/gloo/pair_sockets.hpp"
#include "comm_wrap/gloo/reduce_fns.hpp"
#include "comm_wrap/work_queue.hpp"
#include "shoal/errors.hpp"

namespace shoal::comm {

bool is_gloo_timeout(std::string_view message);

class GlooCommunicator final : public Communicator {
 public:
  GlooCommunicator(GlooOptions options, std::shared_ptr<gloo::rendezvous::Context> context, GlooPairSockets sockets);
  ~GlooCommunicator() override;

  int rank() const override { return options_.rank; }
  int world_size() const override { return options_.world_size; }
  uint64_t epoch() const override { return options_.epoch; }
  const char* backend() const override { return "gloo"; }

  void allreduce(void* buf, size_t count, DataType type, ReduceOp op) override;
  void allreduce_in_place(void* buf, size_t count, DataType type, ReduceOp op, std::shared_ptr<void> keep) override;
  void broadcast(void* buf, size_t bytes, int root) override;
  void allgather(const void* in, void* out, size_t bytes_per_rank) override;
  void barrier() override;
  void reduce_scatter(const void* in, void* out, size_t count, DataType type, ReduceOp op) override;
  void all_to_all(const void* in, void* out, size_t bytes_per_rank) override;
  void gather(const void* in, void* out, size_t bytes_per_rank, int root) override;
  void scatter(const void* in, void* out, size_t bytes_per_rank, int root) override;
  void send(const void* buf, size_t bytes, int peer, uint32_t tag) override;
  void recv(void* buf, size_t bytes, int peer, uint32_t tag) override;
  // Posted on the calling thread at once (so two ranks that each send before they receive never wait on
  // each other's queue), completed on a thread of their own in the order they were posted.
  std::shared_ptr<Work> send_async(const void* buf, size_t bytes, int peer, uint32_t tag) override;
  std::shared_ptr<Work> recv_async(void* buf, size_t bytes, int peer, uint32_t tag) override;

  void abort(const std::string& why) override;
  bool aborted() const override { return aborted_.load() || draining_.load(); }
  void abort_after(const std::string& why, std::chrono::milliseconds grace) override;

  using Communicator::allgather;
  using Communicator::allreduce;
  using Communicator::broadcast;

 private:
  template <class T>
  void allreduce_as(void* buf, size_t count, ReduceOp op);
  template <class T>
  void allreduce_in_place_as(T* buf, size_t count, ReduceOp op, std::shared_ptr<void> keep);
  template <class T>
  void reduce_scatter_as(const void* in, void* out, size_t count, ReduceOp op);
  // Gloo's allreduce of `data` in place, on the runner's worker (the task owns `data`).
  template <class T>
  void allreduce_owned(const std::shared_ptr<std::vector<T>>& data, ReduceOp op, const char* what);

  // Runs one collective on the runner's worker: one at a time, refused once aborted, released at once
  // by abort(), and every Gloo failure translated. The task owns copies of the buffers it touches.
  template <class Fn>
  void run(const char* what, Fn&& fn);
  // Translates a Gloo failure of `what` (aborting this communicator) and throws.
  [[noreturn]] void fail(const char* what, const std::string& message, bool timed_out);
  [[noreturn]] void throw_aborted() const;
  void check_rank(int r, const char* what) const;

  // Point to point: a posted buffer, remembered until its wait ended so that abort() can wake it.
  std::shared_ptr<gloo::transport::UnboundBuffer> post(const void* data, size_t bytes, int peer, uint32_t tag,
                                                       bool sending);
  void settle(const std::shared_ptr<gloo::transport::UnboundBuffer>& buf, bool sending, int peer);

  const GlooOptions options_;
  std::shared_ptr<gloo::rendezvous::Context> context_;
  const GlooPairSockets sockets_;
  CollectiveRunner runner_;
  std::timed_mutex op_mu_;  // Gloo contexts run one collective at a time
  std::atomic<bool> aborted_{false};
  std::atomic<bool> draining_{false};  // abort_after: no new collective; abort once the one in flight ends
  std::thread drainer_;
  mutable std::mutex why_mu_;
  std::string why_;
  std::mutex p2p_mu_;
  std::set<gloo::transport::UnboundBuffer*> p2p_pending_;  // posted, not yet waited for
  std::unique_ptr<detail::WorkQueue> p2p_waits_;           // completes send_async/recv_async in order
};

template <class Fn>
void GlooCommunicator::run(const char* what, Fn&& fn) {
  std::lock_guard lock(op_mu_);
  if (aborted_.load() || draining_.load()) throw_aborted();
  bool finished = false;
  try {
    finished = runner_.run(std::forward<Fn>(fn));
  } catch (const gloo::IoException& e) {
    fail(what, e.what(), is_gloo_timeout(e.what()));
  } catch (const gloo::EnforceNotMet& e) {
    fail(what, e.what(), false);
  } catch (const gloo::Exception& e) {
    fail(what, e.what(), false);
  }
  if (!finished || aborted_.load()) throw_aborted();
}

template <class T>
void GlooCommunicator::allreduce_owned(const std::shared_ptr<std::vector<T>>& data, ReduceOp op, const char* what) {
  run(what, [ctx = context_, data, fn = reduce_fn<T>(op), timeout = options_.collective_timeout] {
    gloo::AllreduceOptions opts(ctx);
    opts.setOutput(data->data(), data->size());
    opts.setReduceFunction(fn);
    opts.setTimeout(timeout);
    gloo::allreduce(opts);
  });
}

}  // namespace shoal::comm

// The NCCL backend: collectives on GPU buffers with non-blocking communicators, so that nothing ever
// waits on a dead peer without a bound. Built only where NCCL was found (SHOAL_HAVE_NCCL).
//
// Abort: abort() (any thread) only raises a flag. The thread running the collective sees it in its
// wait loop, revokes the communicator (ncclCommRevoke: stops the kernels, keeps the handle so that
// ncclCommShrink can still build the next epoch from it) and throws ViewChanged. The handle is
// released with ncclCommAbort, never ncclCommDestroy (destroy is collective and can hang on a dead
// peer). Keeping every NCCL call on the owning thread avoids relying on NCCL's thread safety.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "comm_wrap/bootstrap_tree.hpp"
#include "comm_wrap/communicator.hpp"
#include "comm_wrap/nccl/host_staging.hpp"
#include "comm_wrap/rebuild_plan.hpp"
#include "comm_wrap/rendezvous_store.hpp"

struct ncclComm;     // ncclComm_t is ncclComm*
struct CUstream_st;  // cudaStream_t is CUstream_st*

namespace shoal::comm {

struct NcclOptions {
  int rank = 0;
  int world_size = 1;
  uint64_t epoch = 0;
  int cuda_device = 0;
  // Bounds the unique id's rendezvous, ncclCommInitRankConfig and ncclCommShrink together.
  std::chrono::milliseconds rendezvous_timeout{std::chrono::seconds(120)};
  // Bounds each collective from enqueue to completion on the stream.
  std::chrono::milliseconds collective_timeout{std::chrono::seconds(300)};
  // Where this rank sits (ranks::RankEntry) and every node's agent store: the unique id then travels along the
  // bootstrap tree (bootstrap_tree.hpp). Empty store_at: every rank reads it from the store create() gets.
  uint32_t node_rank = 0;
  uint32_t local_rank = 0;
  uint32_t node_count = 1;
  StoreAt store_at;
};

class NcclCommunicator final : public Communicator {
 public:
  // Fresh init, all ranks of the epoch at once. Throws shoal::ViewChanged (store superseded, or init
  // failed because a peer failed), shoal::Timeout (no unique id, or init not complete in
  // rendezvous_timeout: the half-built communicator is aborted), shoal::Error (bad options, CUDA errors).
  static std::unique_ptr<NcclCommunicator> create(const NcclOptions& options, RendezvousStore& store);

  // ncclCommShrink of `parent` per `plan` (from plan_rebuild), by every survivor at once; `options`
  // holds this rank's new rank, world size and epoch (checked against what NCCL made). Same errors
  // as create(). `parent` stays valid and is released by its destructor.
  static std::unique_ptr<NcclCommunicator> shrink(NcclCommunicator& parent, const Shrink& plan,
                                                  const NcclOptions& options);

  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return options_.rank; }
  int world_size() const override { return options_.world_size; }
  uint64_t epoch() const override { return options_.epoch; }
  const char* backend() const override { return "nccl"; }

  // Buffers are device memory of options.cuda_device (the fast path); host memory also works, through a
  // device staging buffer (host_staging.hpp: for the small agreements the elastic loop and node health
  // make). Each call returns once the operation completed on the communicator's stream.
  void allreduce(void* buf, size_t count, DataType type, ReduceOp op) override;
  void broadcast(void* buf, size_t bytes, int root) override;
  void allgather(const void* in, void* out, size_t bytes_per_rank) override;
  void barrier() override;  // a one-element allreduce: NCCL has no barrier
  // Device memory only (shoal::Error for host buffers). all_to_all, gather and scatter are grouped sends
  // and receives; send and recv are ncclSend and ncclRecv (issued in order from the one thread).
  void reduce_scatter(const void* in, void* out, size_t count, DataType type, ReduceOp op) override;
  void all_to_all(const void* in, void* out, size_t bytes_per_rank) override;
  void gather(const void* in, void* out, size_t bytes_per_rank, int root) override;
  void scatter(const void* in, void* out, size_t bytes_per_rank, int root) override;
  void send(const void* buf, size_t bytes, int peer, uint32_t tag) override;
  void recv(void* buf, size_t bytes, int peer, uint32_t tag) override;
  // A CUDA event recorded on the caller's stream; the communicator's stream waits for it (no host wait).
  std::shared_ptr<void> stream_mark(void* cuda_stream) override;
  void wait_stream_mark(const std::shared_ptr<void>& mark) override;

  void abort(const std::string& why) override;
  bool aborted() const override { return aborted_.load(); }

  // What plan_rebuild needs to know about this communicator.
  OldCommunicatorState rebuild_state() const;
  // The cudaStream_t the collectives run on (the trainer may order its own work after it).
  CUstream_st* stream() const { return stream_; }

 private:
  NcclCommunicator(NcclOptions options, ncclComm* comm);

  template <class Enqueue>
  void run(const char* what, Enqueue&& enqueue);
  void stop_in_flight();
  [[noreturn]] void throw_aborted() const;
  [[noreturn]] void fail(const std::string& why);

  // Host buffers: through staging_, under staging_mu_ (taken before op_mu_).
  void allreduce_staged(void* buf, size_t count, DataType type, ReduceOp op);
  void broadcast_staged(void* buf, size_t bytes, int root);
  void allgather_staged(const void* in, void* out, size_t bytes_per_rank);
  void require_device(const void* p, const char* what) const;
  void check_peer(int peer, const char* what) const;

  const NcclOptions options_;
  ncclComm* comm_ = nullptr;
  CUstream_st* stream_ = nullptr;
  void* scratch_ = nullptr;  // one device int for barrier()
  std::mutex op_mu_;         // one collective at a time on the owning thread
  std::mutex staging_mu_;
  HostStaging staging_;
  std::atomic<bool> aborted_{false};
  std::atomic<bool> revoked_{false};    // ncclCommRevoke was called
  std::atomic<bool> in_flight_{false};  // a collective is between enqueue and completion
  mutable std::mutex why_mu_;
  std::string why_;
};

}  // namespace shoal::comm

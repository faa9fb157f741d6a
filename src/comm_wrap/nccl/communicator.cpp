// The NCCL communicator: non-blocking init and shrink with deadlines, collectives waited for by
// polling the stream, the communicator's async error and the abort flag (see communicator.hpp).
#include "comm_wrap/nccl/communicator.hpp"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstring>
#include <thread>
#include <vector>

#include "base/log.hpp"
#include "comm_wrap/nccl/unique_id.hpp"
#include "shoal/errors.hpp"

namespace shoal::comm {

namespace {

using Clock = std::chrono::steady_clock;

std::string nccl_text(ncclResult_t r, ncclComm_t comm) {
  std::string text = ncclGetErrorString(r);
  const char* last = comm != nullptr ? ncclGetLastError(comm) : nullptr;
  if (last != nullptr && *last != '\0') text += std::string(" (") + last + ")";
  return text;
}

void check_cuda(cudaError_t e, const std::string& what) {
  if (e != cudaSuccess) throw Error("nccl backend: " + what + ": " + cudaGetErrorString(e));
}

ncclDataType_t nccl_type(DataType t) {
  switch (t) {
    case DataType::f32:
      return ncclFloat32;
    case DataType::f64:
      return ncclFloat64;
    case DataType::i32:
      return ncclInt32;
    case DataType::i64:
      return ncclInt64;
    case DataType::bf16:
      return ncclBfloat16;
    case DataType::f16:
      return ncclFloat16;
  }
  return ncclFloat32;
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return ncclSum;
    case ReduceOp::avg:
      return ncclAvg;
    case ReduceOp::min:
      return ncclMin;
    case ReduceOp::max:
      return ncclMax;
  }
  return ncclSum;
}

// Short sleeps: a collective usually completes in micro- to milliseconds, and the abort must be seen
// well within a second; 200 us costs little CPU and bounds the reaction time.
void pause_briefly() { std::this_thread::sleep_for(std::chrono::microseconds(200)); }

// Waits until a non-blocking init or shrink has finished. On failure or deadline the half-built
// communicator is aborted (never destroyed) and the matching exception thrown.
void wait_until_ready(ncclComm_t comm, const NcclOptions& o, Clock::time_point deadline, const char* what) {
  const std::string who =
      std::string("nccl ") + what + " of rank " + std::to_string(o.rank) + ", epoch " + std::to_string(o.epoch);
  for (;;) {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t r = ncclCommGetAsyncError(comm, &state);
    if (r != ncclSuccess) state = r;
    if (state == ncclSuccess) return;
    if (state != ncclInProgress) {
      const std::string text = nccl_text(state, comm);
      ncclCommAbort(comm);
      throw ViewChanged(o.epoch, who + " failed: " + text);
    }
    if (Clock::now() >= deadline) {
      ncclCommAbort(comm);
      throw Timeout(who + ": not complete within " + std::to_string(o.rendezvous_timeout.count()) + " ms");
    }
    pause_briefly();
  }
}

void check_options(const NcclOptions& o) {
  if (o.world_size < 1 || o.rank < 0 || o.rank >= o.world_size) {
    throw Error("nccl backend: rank " + std::to_string(o.rank) + " is outside a world of " +
                std::to_string(o.world_size));
  }
  if (o.rendezvous_timeout.count() <= 0 || o.collective_timeout.count() <= 0) {
    throw Error("nccl backend: rendezvous_timeout and collective_timeout must be positive");
  }
}

// The stores an NcclOptions names live only as long as the rendezvous that made the communicator.
NcclOptions without_stores(NcclOptions options) {
  options.store_at = nullptr;
  return options;
}

ncclConfig_t non_blocking_config() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // every call returns at once; completion is polled, so every wait has a bound
  return config;
}

}  // namespace

std::unique_ptr<NcclCommunicator> NcclCommunicator::create(const NcclOptions& options, RendezvousStore& store) {
  check_options(options);
  const auto deadline = Clock::now() + options.rendezvous_timeout;
  check_cuda(cudaSetDevice(options.cuda_device), "cudaSetDevice(" + std::to_string(options.cuda_device) + ")");

  const ncclUniqueId id =
      options.store_at ? exchange_unique_id(bootstrap_route(options.node_rank, options.local_rank, options.node_count),
                                            options.store_at, options.rendezvous_timeout)
                       : exchange_unique_id(options.rank, store, options.rendezvous_timeout);

  ncclConfig_t config = non_blocking_config();
  ncclComm_t comm = nullptr;
  const ncclResult_t r = ncclCommInitRankConfig(&comm, options.world_size, id, options.rank, &config);
  if (r != ncclSuccess && r != ncclInProgress) {
    const std::string text = nccl_text(r, comm);
    if (comm != nullptr) ncclCommAbort(comm);
    throw Error("nccl backend: ncclCommInitRankConfig: " + text);
  }
  wait_until_ready(comm, options, deadline, "init");
  log::get(log::Component::comm)
      .info("nccl rank {} of {} ready for epoch {} (fresh init)", options.rank, options.world_size, options.epoch);
  return std::unique_ptr<NcclCommunicator>(new NcclCommunicator(options, comm));
}

std::unique_ptr<NcclCommunicator> NcclCommunicator::shrink(NcclCommunicator& parent, const Shrink& plan,
                                                           const NcclOptions& options) {
  check_options(options);
  const auto deadline = Clock::now() + options.rendezvous_timeout;
  std::lock_guard lock(parent.op_mu_);
  if (parent.comm_ == nullptr) throw Error("nccl backend: cannot shrink a released communicator");
  check_cuda(cudaSetDevice(options.cuda_device), "cudaSetDevice(" + std::to_string(options.cuda_device) + ")");
  // A revoked parent reports ncclInProgress until it is quiescent; shrinking before that is invalid.
  if (parent.revoked_.load()) {
    for (;;) {
      ncclResult_t state = ncclSuccess;
      ncclCommGetAsyncError(parent.comm_, &state);
      if (state != ncclInProgress) break;
      if (Clock::now() >= deadline) {
        throw Timeout("nccl shrink of rank " + std::to_string(options.rank) +
                      ": the revoked parent did not become quiescent within " +
                      std::to_string(options.rendezvous_timeout.count()) + " ms");
      }
      pause_briefly();
    }
  }
  std::vector<int> excluded = plan.excluded_old_ranks;
  if (excluded.empty()) throw Error("nccl backend: a shrink must exclude a rank (plan_rebuild inits afresh otherwise)");
  ncclConfig_t config = non_blocking_config();
  ncclComm_t comm = nullptr;
  const int flags = plan.abort_in_flight ? NCCL_SHRINK_ABORT : NCCL_SHRINK_DEFAULT;
  const ncclResult_t r = ncclCommShrink(parent.comm_, excluded.data(), int(excluded.size()), &comm, &config, flags);
  if (r != ncclSuccess && r != ncclInProgress) {
    const std::string text = nccl_text(r, parent.comm_);
    if (comm != nullptr) ncclCommAbort(comm);
    throw ViewChanged(options.epoch, "nccl shrink failed: " + text);
  }
  wait_until_ready(comm, options, deadline, "shrink");
  int nccl_rank = -1, nccl_count = -1;
  ncclCommUserRank(comm, &nccl_rank);
  ncclCommCount(comm, &nccl_count);
  if (nccl_rank != options.rank || nccl_count != options.world_size) {
    ncclCommAbort(comm);
    throw Error("nccl backend: shrink made rank " + std::to_string(nccl_rank) + " of " + std::to_string(nccl_count) +
                ", but the new rank table says " + std::to_string(options.rank) + " of " +
                std::to_string(options.world_size));
  }
  log::get(log::Component::comm)
      .info("nccl rank {} of {} ready for epoch {} (shrunk by {} ranks{})", options.rank, options.world_size,
            options.epoch, excluded.size(), plan.abort_in_flight ? ", parent operations aborted" : "");
  return std::unique_ptr<NcclCommunicator>(new NcclCommunicator(options, comm));
}

NcclCommunicator::NcclCommunicator(NcclOptions options, ncclComm* comm)
    : options_(without_stores(std::move(options))), comm_(comm) {
  // On failure here the destructor does not run: release what exists before throwing.
  cudaStream_t stream = nullptr;
  cudaError_t e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (e == cudaSuccess) e = cudaMalloc(&scratch_, sizeof(int32_t));
  if (e != cudaSuccess) {
    if (stream != nullptr) cudaStreamDestroy(stream);
    ncclCommAbort(comm_);
    check_cuda(e, "creating the communicator's stream and scratch buffer");
  }
  stream_ = stream;
}

NcclCommunicator::~NcclCommunicator() {
  if (!op_mu_.try_lock()) {
    abort("communicator destroyed during a collective");
    op_mu_.lock();
  }
  op_mu_.unlock();
  if (comm_ != nullptr) ncclCommAbort(comm_);  // local and never blocking, unlike ncclCommDestroy
  if (scratch_ != nullptr) cudaFree(scratch_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

void NcclCommunicator::allreduce(void* buf, size_t count, DataType type, ReduceOp op) {
  if (needs_staging(buf)) return allreduce_staged(buf, count, type, op);
  run("allreduce", [&] { return ncclAllReduce(buf, buf, count, nccl_type(type), nccl_op(op), comm_, stream_); });
}

void NcclCommunicator::broadcast(void* buf, size_t bytes, int root) {
  if (root < 0 || root >= world_size()) {
    throw Error("nccl backend: broadcast root " + std::to_string(root) + " is outside [0, " +
                std::to_string(world_size()) + ")");
  }
  if (needs_staging(buf)) return broadcast_staged(buf, bytes, root);
  run("broadcast", [&] { return ncclBroadcast(buf, buf, bytes, ncclUint8, root, comm_, stream_); });
}

void NcclCommunicator::allgather(const void* in, void* out, size_t bytes_per_rank) {
  if (needs_staging(in) || needs_staging(out)) return allgather_staged(in, out, bytes_per_rank);
  run("allgather", [&] { return ncclAllGather(in, out, bytes_per_rank, ncclUint8, comm_, stream_); });
}

void NcclCommunicator::allreduce_staged(void* buf, size_t count, DataType type, ReduceOp op) {
  std::lock_guard lock(staging_mu_);
  check_cuda(cudaSetDevice(options_.cuda_device), "cudaSetDevice");
  const size_t bytes = count * size_of(type);
  void* dev = staging_.reserve(bytes);
  staging_.copy_in(buf, bytes);
  run("allreduce", [&] { return ncclAllReduce(dev, dev, count, nccl_type(type), nccl_op(op), comm_, stream_); });
  staging_.copy_out(buf, bytes);
}

void NcclCommunicator::broadcast_staged(void* buf, size_t bytes, int root) {
  std::lock_guard lock(staging_mu_);
  check_cuda(cudaSetDevice(options_.cuda_device), "cudaSetDevice");
  void* dev = staging_.reserve(bytes);
  staging_.copy_in(buf, bytes);
  run("broadcast", [&] { return ncclBroadcast(dev, dev, bytes, ncclUint8, root, comm_, stream_); });
  staging_.copy_out(buf, bytes);
}

void NcclCommunicator::allgather_staged(const void* in, void* out, size_t bytes_per_rank) {
  std::lock_guard lock(staging_mu_);
  check_cuda(cudaSetDevice(options_.cuda_device), "cudaSetDevice");
  const size_t total = bytes_per_rank * static_cast<size_t>(world_size());
  auto* dev = static_cast<std::byte*>(staging_.reserve(total));
  // This rank's part goes where NCCL expects it in the output: the in-place form of allgather.
  auto* mine = dev + bytes_per_rank * static_cast<size_t>(rank());
  if (bytes_per_rank > 0) {
    if (const auto e = cudaMemcpy(mine, in, bytes_per_rank, cudaMemcpyDefault); e != cudaSuccess) {
      check_cuda(e, "copying an allgather's input to the staging buffer");
    }
  }
  run("allgather", [&] { return ncclAllGather(mine, dev, bytes_per_rank, ncclUint8, comm_, stream_); });
  staging_.copy_out(out, total);
}

void NcclCommunicator::barrier() {
  run("barrier", [&] { return ncclAllReduce(scratch_, scratch_, 1, ncclInt32, ncclSum, comm_, stream_); });
}

void NcclCommunicator::require_device(const void* p, const char* what) const {
  if (p != nullptr && needs_staging(p)) {
    throw Error(std::string("nccl backend: ") + what + " needs device memory of cuda device " +
                std::to_string(options_.cuda_device) + " (host buffers go through the gloo backend)");
  }
}

void NcclCommunicator::check_peer(int peer, const char* what) const {
  if (peer < 0 || peer >= world_size()) {
    throw Error(std::string("nccl backend: ") + what + " " + std::to_string(peer) + " is outside [0, " +
                std::to_string(world_size()) + ")");
  }
}

void NcclCommunicator::reduce_scatter(const void* in, void* out, size_t count, DataType type, ReduceOp op) {
  require_device(in, "reduce_scatter");
  require_device(out, "reduce_scatter");
  run("reduce_scatter",
      [&] { return ncclReduceScatter(in, out, count, nccl_type(type), nccl_op(op), comm_, stream_); });
}

void NcclCommunicator::all_to_all(const void* in, void* out, size_t bytes_per_rank) {
  require_device(in, "all_to_all");
  require_device(out, "all_to_all");
  const auto* src = static_cast<const std::byte*>(in);
  auto* dst = static_cast<std::byte*>(out);
  run("all_to_all", [&] {
    ncclGroupStart();
    for (int p = 0; p < world_size(); ++p) {
      ncclSend(src + bytes_per_rank * size_t(p), bytes_per_rank, ncclUint8, p, comm_, stream_);
      ncclRecv(dst + bytes_per_rank * size_t(p), bytes_per_rank, ncclUint8, p, comm_, stream_);
    }
    return ncclGroupEnd();
  });
}

void NcclCommunicator::gather(const void* in, void* out, size_t bytes_per_rank, int root) {
  check_peer(root, "gather root");
  require_device(in, "gather");
  if (rank() == root) require_device(out, "gather");
  auto* dst = static_cast<std::byte*>(out);
  run("gather", [&] {
    ncclGroupStart();
    ncclSend(in, bytes_per_rank, ncclUint8, root, comm_, stream_);
    if (rank() == root) {
      for (int p = 0; p < world_size(); ++p) {
        ncclRecv(dst + bytes_per_rank * size_t(p), bytes_per_rank, ncclUint8, p, comm_, stream_);
      }
    }
    return ncclGroupEnd();
  });
}

void NcclCommunicator::scatter(const void* in, void* out, size_t bytes_per_rank, int root) {
  check_peer(root, "scatter root");
  require_device(out, "scatter");
  if (rank() == root) require_device(in, "scatter");
  const auto* src = static_cast<const std::byte*>(in);
  run("scatter", [&] {
    ncclGroupStart();
    if (rank() == root) {
      for (int p = 0; p < world_size(); ++p) {
        ncclSend(src + bytes_per_rank * size_t(p), bytes_per_rank, ncclUint8, p, comm_, stream_);
      }
    }
    ncclRecv(out, bytes_per_rank, ncclUint8, root, comm_, stream_);
    return ncclGroupEnd();
  });
}

void NcclCommunicator::send(const void* buf, size_t bytes, int peer, uint32_t tag) {
  (void)tag;  // NCCL pairs sends and receives by order alone
  check_peer(peer, "send peer");
  require_device(buf, "send");
  run("send", [&] { return ncclSend(buf, bytes, ncclUint8, peer, comm_, stream_); });
}

void NcclCommunicator::recv(void* buf, size_t bytes, int peer, uint32_t tag) {
  (void)tag;
  check_peer(peer, "recv peer");
  require_device(buf, "recv");
  run("recv", [&] { return ncclRecv(buf, bytes, ncclUint8, peer, comm_, stream_); });
}

std::shared_ptr<void> NcclCommunicator::stream_mark(void* cuda_stream) {
  // On the caller's thread: leave its current device as it was.
  int before = -1;
  check_cuda(cudaGetDevice(&before), "cudaGetDevice");
  check_cuda(cudaSetDevice(options_.cuda_device), "cudaSetDevice");
  cudaEvent_t event = nullptr;
  cudaError_t e = cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
  if (e == cudaSuccess) e = cudaEventRecord(event, static_cast<cudaStream_t>(cuda_stream));
  cudaSetDevice(before);
  if (e != cudaSuccess) {
    if (event != nullptr) cudaEventDestroy(event);
    check_cuda(e, "recording the caller's stream");
  }
  return std::shared_ptr<void>(event, [](void* ev) { cudaEventDestroy(static_cast<cudaEvent_t>(ev)); });
}

void NcclCommunicator::wait_stream_mark(const std::shared_ptr<void>& mark) {
  if (!mark) return;
  std::lock_guard lock(op_mu_);
  check_cuda(cudaSetDevice(options_.cuda_device), "cudaSetDevice");
  check_cuda(cudaStreamWaitEvent(stream_, static_cast<cudaEvent_t>(mark.get()), 0),
             "ordering the communicator's stream after the caller's");
}

void NcclCommunicator::abort(const std::string& why) {
  std::lock_guard lock(why_mu_);
  if (aborted_.load()) return;
  why_ = why;
  aborted_.store(true);
  log::get(log::Component::comm).info("nccl rank {} of epoch {} aborted: {}", rank(), epoch(), why);
}

OldCommunicatorState NcclCommunicator::rebuild_state() const {
  OldCommunicatorState state;
  state.exists = true;
  state.released = comm_ == nullptr;
  state.aborted = aborted_.load() || revoked_.load();
  state.in_flight = in_flight_.load();
  return state;
}

template <class Enqueue>
void NcclCommunicator::run(const char* what, Enqueue&& enqueue) {
  std::lock_guard lock(op_mu_);
  if (aborted_.load()) throw_aborted();
  check_cuda(cudaSetDevice(options_.cuda_device), "cudaSetDevice");
  const auto deadline = Clock::now() + options_.collective_timeout;
  in_flight_.store(true);
  const ncclResult_t r = enqueue();
  if (r != ncclSuccess && r != ncclInProgress) fail(std::string(what) + ": " + nccl_text(r, comm_));
  // Non-blocking: the enqueue itself may still be in progress; then the stream runs the kernel.
  bool enqueued = false;
  for (;;) {
    if (aborted_.load()) {
      stop_in_flight();
      throw_aborted();
    }
    ncclResult_t state = ncclSuccess;
    ncclCommGetAsyncError(comm_, &state);
    if (state != ncclSuccess && state != ncclInProgress) {
      fail(std::string(what) + " failed, a peer is gone: " + nccl_text(state, comm_));
    }
    if (!enqueued) enqueued = state == ncclSuccess;
    if (enqueued) {
      const cudaError_t e = cudaStreamQuery(stream_);
      if (e == cudaSuccess) break;
      if (e != cudaErrorNotReady) fail(std::string(what) + ": CUDA error " + cudaGetErrorString(e));
    }
    if (Clock::now() >= deadline) {
      const std::string text = std::string("nccl ") + what + " of rank " + std::to_string(rank()) + ", epoch " +
                               std::to_string(epoch()) + ": not complete within " +
                               std::to_string(options_.collective_timeout.count()) + " ms";
      abort(std::string(what) + " timed out");
      stop_in_flight();
      throw Timeout(text);
    }
    pause_briefly();
  }
  in_flight_.store(false);
}

// Stops the kernels of the collective in flight so that the stream drains and the handle can still be
// shrunk. Called on the owning thread only.
void NcclCommunicator::stop_in_flight() {
  if (revoked_.load() || comm_ == nullptr) return;
  const ncclResult_t r = ncclCommRevoke(comm_, NCCL_REVOKE_DEFAULT);
  revoked_.store(true);
  if (r != ncclSuccess && r != ncclInProgress) {
    log::get(log::Component::comm).warn("nccl rank {}: ncclCommRevoke: {}", rank(), nccl_text(r, comm_));
  }
}

void NcclCommunicator::throw_aborted() const {
  std::lock_guard lock(why_mu_);
  throw ViewChanged(epoch(), "nccl communicator aborted: " + why_);
}

void NcclCommunicator::fail(const std::string& why) {
  abort(why);
  stop_in_flight();
  throw_aborted();
}

}  // namespace shoal::comm

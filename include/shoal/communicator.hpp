// The communicator a trainer uses: one small interface, one backend per file inside libshoal (Gloo on
// CPU buffers, NCCL on GPU buffers). A communicator belongs to one epoch; it is never repaired, only
// replaced. Operations throw shoal::ViewChanged once abort() was called (from any thread), including
// the ones already in flight, so a trainer never hangs on a dead peer.
//
// Every operation has a blocking form (returns when it completed) and an asynchronous one (submit() and
// the *_async calls: returns a shoal::Work at once, runs on the communicator's own thread in submission
// order). Do not interleave blocking calls from several threads, or with submitted work still pending:
// every rank must issue the same operations in the same order.
#pragma once

#include <cstddef>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "shoal/api.hpp"
#include "shoal/errors.hpp"
#include "shoal/work.hpp"

namespace shoal {

enum class ReduceOp : uint8_t { sum, avg, min, max };
enum class DataType : uint8_t { f32, f64, i32, i64, bf16, f16 };  // bf16/f16: NCCL only

namespace detail {
class WorkQueue;
}

// Owned through std::shared_ptr (sessions hand communicators out so): submitted work keeps its
// communicator alive until it ran.
class SHOAL_API Communicator : public std::enable_shared_from_this<Communicator> {
 public:
  Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  virtual ~Communicator();

  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  virtual uint64_t epoch() const = 0;
  virtual const char* backend() const = 0;  // "gloo" or "nccl"

  // In place on `count` elements of `buf` (device memory for NCCL).
  virtual void allreduce(void* buf, size_t count, DataType type, ReduceOp op) = 0;
  // `bytes` from `root`'s buffer into everyone's.
  virtual void broadcast(void* buf, size_t bytes, int root) = 0;
  // Every rank contributes `bytes_per_rank`; `out` holds world_size() * bytes_per_rank, in rank order.
  virtual void allgather(const void* in, void* out, size_t bytes_per_rank) = 0;
  virtual void barrier() = 0;

  // allreduce without the safety copy: Gloo reduces in `buf` itself, so a collective that fails leaves it
  // partly reduced (use it where a failed step is discarded anyway, such as gradient buckets). `keep` is
  // held until the backend is done with `buf`, which after an abort can be later than the call's return:
  // pass what owns the memory. Backends without the copy (NCCL) do exactly allreduce.
  virtual void allreduce_in_place(void* buf, size_t count, DataType type, ReduceOp op, std::shared_ptr<void> keep) {
    (void)keep;
    allreduce(buf, count, type, op);
  }

  // Added later; a backend that lacks one throws shoal::Error naming it. In host memory for Gloo, device
  // memory for NCCL.
  // Reduces every rank's `in` (world_size() * count elements) element-wise; rank r keeps block r (`count`
  // elements, in rank order) of the result in `out`.
  virtual void reduce_scatter(const void* in, void* out, size_t count, DataType type, ReduceOp op);
  // `in` holds world_size() blocks of bytes_per_rank; block p goes to rank p, and block p of `out` receives
  // rank p's block for this rank.
  virtual void all_to_all(const void* in, void* out, size_t bytes_per_rank);
  // root's `out` (world_size() * bytes_per_rank) receives every rank's `in`, in rank order; `out` is not
  // touched on other ranks (may be null there).
  virtual void gather(const void* in, void* out, size_t bytes_per_rank, int root);
  // Block r of root's `in` (world_size() * bytes_per_rank; may be null elsewhere) goes to rank r's `out`.
  virtual void scatter(const void* in, void* out, size_t bytes_per_rank, int root);
  // Point to point: a send to `peer` matches that peer's recv from this rank with the same tag and size;
  // sends and receives between two ranks with one tag pair up in the order they are issued. A send may
  // return before the peer received (the bytes were handed to the transport).
  virtual void send(const void* buf, size_t bytes, int peer, uint32_t tag);
  virtual void recv(void* buf, size_t bytes, int peer, uint32_t tag);

  // Runs `op(*this)` on this communicator's own thread after every operation submitted before it, and
  // returns at once. What `op` throws fails the Work (ViewChanged when the view changed meanwhile). The
  // buffers `op` touches must stay valid and untouched until the Work is done. Throws shoal::Error when
  // the communicator is not owned by a std::shared_ptr.
  std::shared_ptr<Work> submit(std::function<void(Communicator&)> op);
  // The same, ordered after the GPU work queued on the CUDA stream `after_cuda_stream` (a cudaStream_t)
  // until this call: an NCCL operation then starts on the device once that work is done, with no host
  // wait (an event). Ignored by backends without device memory.
  std::shared_ptr<Work> submit(std::function<void(Communicator&)> op, void* after_cuda_stream);

  std::shared_ptr<Work> allreduce_async(void* buf, size_t count, DataType type, ReduceOp op) {
    return submit([=](Communicator& c) { c.allreduce(buf, count, type, op); });
  }
  std::shared_ptr<Work> broadcast_async(void* buf, size_t bytes, int root) {
    return submit([=](Communicator& c) { c.broadcast(buf, bytes, root); });
  }
  std::shared_ptr<Work> allgather_async(const void* in, void* out, size_t bytes_per_rank) {
    return submit([=](Communicator& c) { c.allgather(in, out, bytes_per_rank); });
  }
  std::shared_ptr<Work> reduce_scatter_async(const void* in, void* out, size_t count, DataType type, ReduceOp op) {
    return submit([=](Communicator& c) { c.reduce_scatter(in, out, count, type, op); });
  }
  std::shared_ptr<Work> all_to_all_async(const void* in, void* out, size_t bytes_per_rank) {
    return submit([=](Communicator& c) { c.all_to_all(in, out, bytes_per_rank); });
  }
  std::shared_ptr<Work> barrier_async() {
    return submit([](Communicator& c) { c.barrier(); });
  }
  // Point to point without waiting: Gloo posts the send or receive at once, so two ranks that each send
  // to the other before receiving never wait on each other; other backends queue it like submit().
  virtual std::shared_ptr<Work> send_async(const void* buf, size_t bytes, int peer, uint32_t tag);
  virtual std::shared_ptr<Work> recv_async(void* buf, size_t bytes, int peer, uint32_t tag);

  // Device ordering for submit(op, stream), for backends with device memory (NCCL); wrappers forward them.
  // stream_mark: a mark (a CUDA event) recorded now on `cuda_stream`, or null where there is nothing to
  // order. wait_stream_mark: the communicator's next operation starts on the device after `mark`.
  virtual std::shared_ptr<void> stream_mark(void* cuda_stream) {
    (void)cuda_stream;
    return nullptr;
  }
  virtual void wait_stream_mark(const std::shared_ptr<void>& mark) { (void)mark; }

  // Typed forms of the calls above, for buffers in host memory (Gloo) or device memory (NCCL).
  void allreduce(std::span<float> data, ReduceOp op) { allreduce(data.data(), data.size(), DataType::f32, op); }
  void allreduce(std::span<double> data, ReduceOp op) { allreduce(data.data(), data.size(), DataType::f64, op); }
  void allreduce(std::span<int32_t> data, ReduceOp op) { allreduce(data.data(), data.size(), DataType::i32, op); }
  void allreduce(std::span<int64_t> data, ReduceOp op) { allreduce(data.data(), data.size(), DataType::i64, op); }
  void broadcast(std::span<std::byte> data, int root) { broadcast(data.data(), data.size(), root); }
  // `out` holds world_size() times `in`, in rank order; throws shoal::Error when it does not.
  void allgather(std::span<const std::byte> in, std::span<std::byte> out) {
    if (out.size() != in.size() * static_cast<size_t>(world_size())) {
      throw Error("allgather: the output holds " + std::to_string(out.size()) + " bytes, not world_size() x " +
                  std::to_string(in.size()));
    }
    allgather(in.data(), out.data(), in.size());
  }

  // From any thread, any number of times: operations in flight and later ones throw ViewChanged(why).
  virtual void abort(const std::string& why) = 0;
  virtual bool aborted() const = 0;
  // Like abort(why), but a collective already in flight may still finish, for at most `grace`; later ones
  // throw ViewChanged(why) at once (aborted() is true from now on). For changes that do not stop the peers
  // from finishing what they started -- a member that left gracefully after its last collective, a view
  // that only adds members -- so that a peer's last collective is not cut short. Backends that cannot
  // tell abort at once.
  virtual void abort_after(const std::string& why, std::chrono::milliseconds grace) {
    (void)grace;
    abort(why);
  }

 private:
  std::mutex queue_mu_;
  std::shared_ptr<detail::WorkQueue> queue_;  // started by the first submit()
};

}  // namespace shoal

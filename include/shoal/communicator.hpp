// The communicator a trainer uses: one small interface, one backend per file inside libshoal (Gloo on
// CPU buffers, NCCL on GPU buffers). A communicator belongs to one epoch; it is never repaired, only
// replaced. Operations throw shoal::ViewChanged once abort() was called (from any thread), including
// the ones already in flight, so a trainer never hangs on a dead peer.
#pragma once

#include <cstddef>
#include <chrono>
#include <cstdint>
#include <span>
#include <string>

#include "shoal/api.hpp"
#include "shoal/errors.hpp"

namespace shoal {

enum class ReduceOp : uint8_t { sum, avg, min, max };
enum class DataType : uint8_t { f32, f64, i32, i64, bf16, f16 };  // bf16/f16: NCCL only

class SHOAL_API Communicator {
 public:
  virtual ~Communicator() = default;

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
};

}  // namespace shoal

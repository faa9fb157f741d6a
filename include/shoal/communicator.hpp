// The communicator a trainer uses: one small interface, one backend per file inside libshoal (Gloo on
// CPU buffers, NCCL on GPU buffers). A communicator belongs to one epoch; it is never repaired, only
// replaced. Operations throw shoal::ViewChanged once abort() was called (from any thread), including
// the ones already in flight, so a trainer never hangs on a dead peer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "shoal/api.hpp"

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

  // From any thread, any number of times: operations in flight and later ones throw ViewChanged(why).
  virtual void abort(const std::string& why) = 0;
  virtual bool aborted() const = 0;
};

}  // namespace shoal

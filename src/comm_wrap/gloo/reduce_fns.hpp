// The element-wise reductions Gloo's collectives call, one per (type, operation).
#pragma once

#include <algorithm>
#include <cstddef>

#include "comm_wrap/communicator.hpp"

namespace shoal::comm {

using ReduceFn = void (*)(void*, const void*, const void*, size_t);

template <class T>
void reduce_sum(void* out, const void* a, const void* b, size_t n) {
  auto* o = static_cast<T*>(out);
  const auto* x = static_cast<const T*>(a);
  const auto* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) o[i] = x[i] + y[i];
}

template <class T>
void reduce_min(void* out, const void* a, const void* b, size_t n) {
  auto* o = static_cast<T*>(out);
  const auto* x = static_cast<const T*>(a);
  const auto* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) o[i] = std::min(x[i], y[i]);
}

template <class T>
void reduce_max(void* out, const void* a, const void* b, size_t n) {
  auto* o = static_cast<T*>(out);
  const auto* x = static_cast<const T*>(a);
  const auto* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) o[i] = std::max(x[i], y[i]);
}

// avg is a sum followed by a local division; integers divide as C++ does (truncating toward zero),
// which is also what NCCL's ncclAvg does for integer types.
template <class T>
ReduceFn reduce_fn(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg:
      return &reduce_sum<T>;
    case ReduceOp::min:
      return &reduce_min<T>;
    case ReduceOp::max:
      return &reduce_max<T>;
  }
  return nullptr;
}

// Divides each of `count` elements by `world` where `op` is avg.
template <class T>
void finish_avg(T* p, size_t count, ReduceOp op, int world) {
  if (op != ReduceOp::avg) return;
  for (size_t i = 0; i < count; ++i) p[i] = static_cast<T>(p[i] / static_cast<T>(world));
}

}  // namespace shoal::comm

// The bytes test checkpoints are filled with: a function of (step, buffer, offset), so that any
// process can tell whether what it reads is exactly what step `step` wrote; and a page-aligned buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "ckpt_shm/version_layout.hpp"

namespace shoal::ckpt::test {

inline std::byte pattern_byte(uint64_t step, size_t buffer, size_t i) {
  return std::byte(static_cast<uint8_t>(step * 131 + buffer * 17 + i * 7 + (i >> 8)));
}

inline void fill_pattern(std::span<std::byte> bytes, uint64_t step, size_t buffer) {
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = pattern_byte(step, buffer, i);
}

inline bool has_pattern(std::span<const std::byte> bytes, uint64_t step, size_t buffer) {
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] != pattern_byte(step, buffer, i)) return false;
  }
  return true;
}

// A zeroed, page-aligned buffer of n bytes, as a segment is.
struct Segment {
  explicit Segment(size_t n) : storage((n + 2 * kDataAlignment) / 8) {
    auto* p = reinterpret_cast<std::byte*>(storage.data());
    const size_t skew = (kDataAlignment - reinterpret_cast<uintptr_t>(p) % kDataAlignment) % kDataAlignment;
    bytes = std::span<std::byte>(p + skew, n);
  }
  std::vector<uint64_t> storage;
  std::span<std::byte> bytes;
};

}  // namespace shoal::ckpt::test

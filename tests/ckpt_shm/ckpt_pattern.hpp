// The bytes test checkpoints are filled with: a function of (step, buffer, offset), so that any
// process can tell whether what it reads is exactly what step `step` wrote.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

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

}  // namespace shoal::ckpt::test

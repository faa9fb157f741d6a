// CRC32C (Castagnoli), the checksum every checkpoint version carries: over its header and buffer
// table, and over each buffer. Software slicing-by-8, so the result is the same on every host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace shoal::ckpt {

// Why CRC32C: it is the checksum of iSCSI, ext4 and RocksDB, well understood for detecting torn
// writes and flipped bits, and a later change may switch to the SSE4.2/ARMv8 instruction for speed
// without changing a single stored value.
inline constexpr uint32_t kCrc32cInitial = 0;

// Continues a running CRC32C: crc32c(b, crc32c(a)) == crc32c(a ++ b).
uint32_t crc32c(std::span<const std::byte> bytes, uint32_t crc = kCrc32cInitial);

}  // namespace shoal::ckpt

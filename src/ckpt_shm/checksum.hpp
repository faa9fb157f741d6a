// CRC32C (Castagnoli), the checksum every checkpoint version carries, and the chunked buffer checksum
// built on it. The SSE4.2 crc32 instruction where the CPU has it, software slicing-by-8 elsewhere:
// both give the same values, so a version sealed on one host verifies on any other.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace shoal::ckpt {

// Why CRC32C: it is the checksum of iSCSI, ext4 and RocksDB, well understood for detecting torn
// writes and flipped bits, and x86 (SSE4.2) and ARMv8 compute it in one instruction per 8 bytes.
inline constexpr uint32_t kCrc32cInitial = 0;

// Continues a running CRC32C: crc32c(b, crc32c(a)) == crc32c(a ++ b). Uses the hardware instruction
// when crc32c_hardware_available().
uint32_t crc32c(std::span<const std::byte> bytes, uint32_t crc = kCrc32cInitial);
// The same function, always in software: the reference the hardware path is tested against.
uint32_t crc32c_software(std::span<const std::byte> bytes, uint32_t crc = kCrc32cInitial);
// Whether this CPU has the crc32 instruction (checked once, at first use).
bool crc32c_hardware_available();

// The buffer checksum ("chunked CRC32C"): cut the buffer into consecutive chunks of this many bytes
// (the last one may be shorter), take each chunk's crc32c, and return the crc32c of those values
// written as 4-byte little-endian words, in order. An empty buffer has no chunks: its checksum is 0.
//
// Why not one crc32c over the whole buffer: the crc32 instruction has a latency of 3 cycles and a
// throughput of 1 per cycle, so one dependency chain reaches a third of what the CPU can do. Chunks
// are independent, so three of them run as three interleaved chains (over 20 GB/s on one core)
// without the polynomial arithmetic that combining CRCs needs; and a receiver verifies chunk by
// chunk while the bytes arrive. 64 KiB keeps the outer checksum's share negligible (4 bytes per
// 64 KiB) and three chunks' streams within the prefetchers' reach.
inline constexpr size_t kChecksumChunkBytes = 64 * 1024;

uint32_t buffer_checksum(std::span<const std::byte> bytes);

// The crc32c of each chunk of `src`, in order, into out[0, chunk count): the values buffer_checksum
// folds, computed as it computes them (three chunks at a time). With copy_to (src.size() writable bytes,
// not overlapping src), src is copied there in the same pass. A ranged read checks a buffer's list against
// its sealed checksum, then the chunks it copies against the list.
void chunk_crc_values(std::span<const std::byte> src, uint32_t* out, std::byte* copy_to = nullptr);

// From this size on, buffer_checksum, BufferChecksum::update (for the whole chunks of one call) and
// copy_with_checksum split their chunks over two threads where the machine has two CPUs or more: the
// calling thread takes the first half, a helper thread started for the call takes the second, and
// the call joins it before returning (nothing outlives the call; no thread pool). One core copying
// and checksumming reaches about memcpy's speed; two reach well past it (1 GiB: 0.057 s against
// memcpy's 0.096 s on the project's machines). Below this size a thread's start would cost more
// than it saves. The values are the same whichever way the work is split.
inline constexpr size_t kParallelChecksumBytes = size_t{16} << 20;

// Copies src into dst and returns buffer_checksum(src), in one pass over memory: each 8-byte word is
// loaded once, fed to the checksum and stored. dst and src must have the same size and must not
// overlap (a size mismatch aborts: it is a caller's bug, and a short copy would seal wrong data).
// Saves use it to copy into a segment (RankStore::write_buffer); a restore uses it the other way,
// out of a segment into its own memory, comparing the result with the version's checksum
// (copy_and_verify): the bytes are read once for both.
//
// Large copies (several MiB) into a destination that starts on a cache line use non-temporal stores,
// as memcpy does at that size: a checkpoint copy is not read again soon, and bypassing the cache saves
// reading each destination line before writing it. They are fenced before the function returns, so a
// later release store (sealing a version) orders after them like after ordinary stores. Large copies
// also use a second thread (kParallelChecksumBytes).
// With chunk_values, each chunk's crc32c (the values the checksum folds) is written there as well:
// chunk_count(src.size()) values (chunk_ranges.hpp), what a segment keeps beside its version (chunk_lists.hpp).
uint32_t copy_with_checksum(std::span<std::byte> dst, std::span<const std::byte> src,
                            uint32_t* chunk_values = nullptr);

// copy_with_checksum, then whether src's checksum is `expected`. On false dst holds src's bytes
// all the same, which failed their check: do not use them.
bool copy_and_verify(std::span<std::byte> dst, std::span<const std::byte> src, uint32_t expected);

// buffer_checksum over bytes that arrive in pieces: any split of the same bytes gives the same value.
class BufferChecksum {
 public:
  BufferChecksum() = default;
  // Also writes each chunk's crc32c into values[0, chunks) as it is known (the last, partial chunk's at
  // finish()): values must have room for every chunk of the bytes to come.
  explicit BufferChecksum(uint32_t* values) : values_(values) {}
  void update(std::span<const std::byte> bytes);
  // The checksum of everything given so far; update may continue afterwards (after a finish() that
  // wrote a partial chunk's value, only with the bytes that complete that chunk).
  uint32_t finish() const;
  uint64_t bytes() const { return bytes_; }

 private:
  uint32_t* values_ = nullptr;
  uint64_t chunks_ = 0;  // whole chunks finished (and written to values_)
  uint32_t outer_ = ~uint32_t{0};  // running CRC register over the finished chunks' values
  uint32_t chunk_ = ~uint32_t{0};  // running CRC register of the chunk being filled
  size_t chunk_fill_ = 0;          // bytes in that chunk, always < kChecksumChunkBytes
  uint64_t bytes_ = 0;
};

}  // namespace shoal::ckpt

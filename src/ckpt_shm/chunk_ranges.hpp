// Ranged reads of a sealed version, sans IO: which 64 KiB checksum chunks cover the byte ranges a reader
// wants, how long the ranged stream is, and how a reader checks a buffer's chunk checksums against the
// sealed buffer checksum (checksum.hpp: the buffer checksum is the crc32c of its chunks' crc32c values).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "ckpt_shm/checksum.hpp"

namespace shoal::ckpt {

// The most ranges one ranged read may name, and so the most chunk runs one ranged fetch carries.
inline constexpr size_t kMaxReadRanges = size_t{1} << 16;

// Bytes [offset, offset + bytes) of buffer `buffer` (its index in the version's table).
struct BufferByteRange {
  uint32_t buffer = 0;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

// Chunks [first_chunk, first_chunk + chunks) of one buffer: what a ranged fetch sends.
struct ChunkRun {
  uint32_t buffer = 0;
  uint64_t first_chunk = 0;
  uint64_t chunks = 0;
  bool operator==(const ChunkRun&) const = default;
};

// The chunks a buffer of `bytes` bytes is cut into (the last may be shorter); 0 for an empty buffer.
uint64_t chunk_count(uint64_t bytes);

// The byte span [offset, offset + bytes) of a run within its buffer of `buffer_bytes` (the last chunk
// may be short). The run must lie within the buffer (check_chunk_runs).
struct RunBytes {
  uint64_t offset = 0;
  uint64_t bytes = 0;
};
RunBytes run_bytes(const ChunkRun& run, uint64_t buffer_bytes);

// The chunk runs covering `ranges` over buffers of the given sizes: sorted by (buffer, first chunk),
// overlapping and touching runs merged, empty ranges needing none. Fails, naming the range, for a buffer
// index beyond the table, a range that ends past its buffer (or overflows), or more than kMaxReadRanges.
Result<std::vector<ChunkRun>> plan_chunk_runs(std::span<const uint64_t> buffer_sizes,
                                              std::span<const BufferByteRange> ranges);

// What a server checks of the runs a reader asked for: at most kMaxReadRanges, each naming a buffer of
// the table, non-empty, within its buffer, in strictly increasing order without overlap.
Status check_chunk_runs(std::span<const uint64_t> buffer_sizes, std::span<const ChunkRun> runs);

// The ranged stream after the prefix: for each buffer the runs name, at its first run, its chunk crcs
// (4 bytes little-endian each, every chunk of the buffer); then each run's bytes. Runs must pass
// check_chunk_runs.
uint64_t ranged_stream_bytes(std::span<const uint64_t> buffer_sizes, std::span<const ChunkRun> runs);

// The crc32c of each chunk of `bytes`, in order.
std::vector<uint32_t> chunk_crcs(std::span<const std::byte> bytes);
// The chunk crcs as the stream carries them (4-byte little-endian words) and back.
std::vector<std::byte> encode_chunk_crcs(std::span<const uint32_t> crcs);
std::vector<uint32_t> decode_chunk_crcs(std::span<const std::byte> bytes);
// The buffer checksum whose chunks have these crcs (what buffer_checksum folds).
uint32_t checksum_of_chunk_crcs(std::span<const uint32_t> crcs);
// Whether a list of chunk crcs is the one whose buffer checksum is `checksum` (the sealed value).
bool chunk_crcs_match(std::span<const uint32_t> crcs, uint32_t checksum);

}  // namespace shoal::ckpt

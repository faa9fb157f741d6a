// The on-segment format of one checkpoint version: a fixed header, a table of buffers, then the
// buffers' bytes. Encoding writes it in place; decoding trusts none of it (a crash, a stray write or
// a bad replica can leave anything there) and refuses with a cause instead of crashing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"

namespace shoal::ckpt {

// Layout, all integers little-endian (a big-endian reader sees a bad magic and refuses):
//
//   [0, 256)                 VersionHeader
//   [256, 256 + 128 * n)     n BufferEntry, in the order the buffers were given
//   [data_offset, total)     buffer i at offsets[i]; data_offset = 256 + 128 n rounded up to 4096,
//                            each buffer starts at the previous end rounded up to 256
//
// The layout is canonical: offsets follow from the sizes alone, and the decoder recomputes them.
// [0, data_offset) is self-describing (sizes and checksums of every buffer), so a version can be
// streamed to a peer as that prefix followed by the raw bytes, and held there with the same layout.
//
// Buffer checksums are the chunked CRC32C of checksum.hpp (buffer_checksum), so a receiver verifies a
// buffer chunk by chunk as it streams in; the meta checksum is a plain crc32c.
//
// Sealing order: buffer checksums, then the meta checksum (header with state and meta_checksum
// zeroed, followed by the table), then `state` flips from writing to sealed behind a release fence.
// A crash at any point before the flip leaves the version unsealed, and unsealed is never returned.
//
// Format 2 (this one) differs from format 1 in the buffer checksum (chunked, kind 2 instead of plain
// CRC32C, kind 1) and in the world size taken from the reserved header bytes. Format 1 versions are
// refused as bad_format: checkpoints in shared memory do not outlive an upgrade of the agent.
inline constexpr uint32_t kFormatVersion = 2;
inline constexpr size_t kHeaderBytes = 256;
inline constexpr size_t kEntryBytes = 128;
inline constexpr size_t kDataAlignment = 4096;   // page aligned: pinnable for cudaMemcpy
inline constexpr size_t kBufferAlignment = 256;  // what cudaMalloc guarantees, and a cache-line multiple
inline constexpr size_t kMaxBufferNameBytes = 103;
inline constexpr size_t kMaxBuffers = 1u << 20;
inline constexpr uint32_t kChecksumChunkedCrc32c = 2;
// The most bytes a version's prefix [0, data_offset) may claim: a receiver sizes a buffer from a header
// it does not trust yet. kMaxBuffers entries need about 128 MiB.
inline constexpr uint64_t kMaxPrefixBytes = uint64_t{256} << 20;

enum class VersionState : uint32_t { empty = 0, writing = 1, sealed = 2 };

struct BufferSpec {
  std::string name;  // 1..kMaxBufferNameBytes bytes, no NUL, unique within a version
  uint64_t bytes = 0;
};

struct VersionIdentity {
  std::string job;  // a valid job name (see shm_segment.hpp)
  uint32_t rank = 0;
  uint64_t step = 0;
  uint64_t sequence = 0;  // commit order within the rank: newer saves have larger values
  uint32_t world = 0;     // the job's world size when this version was saved; 0: unknown, else > rank
};

struct LayoutPlan {
  uint64_t data_offset = 0;
  uint64_t total_bytes = 0;       // the bytes a segment needs to hold this version
  std::vector<uint64_t> offsets;  // one per buffer, from the start of the segment
};

// Where each buffer goes; fails for an empty list, bad or duplicate names, or sizes that overflow.
Result<LayoutPlan> plan_layout(std::span<const BufferSpec> buffers);

// Marks the segment as being written (before touching anything else), then writes the header and
// the table. `segment` must hold at least plan.total_bytes.
Status begin_version(std::span<std::byte> segment, const VersionIdentity& id, std::span<const BufferSpec> buffers,
                     const LayoutPlan& plan);

// Checksums the buffers and seals. Fails (and seals nothing) if the header or table no longer parse.
Status seal_version(std::span<std::byte> segment);
// The same, taking the checksums the caller already has (from copy_with_checksum, as the bytes were
// copied in) instead of reading those buffers again. One entry per buffer, in table order; nullopt
// where the buffer must be checksummed here. A known checksum is trusted: it must be
// buffer_checksum of exactly the bytes in the segment.
Status seal_version(std::span<std::byte> segment, std::span<const std::optional<uint32_t>> known_checksums);

// For a version whose bytes come from elsewhere (a peer's stream) rather than begin_version: marks
// the segment as being written, then copies in `prefix` (a version's [0, data_offset), as
// decode_prefix accepted it) except its state word. A crash before mark_sealed leaves it unsealed.
Status begin_copied_version(std::span<std::byte> segment, std::span<const std::byte> prefix);
// Flips a version being written to sealed behind a release fence, computing nothing: for a copy whose
// buffers were verified against the prefix's checksums as they arrived.
Status mark_sealed(std::span<std::byte> segment);

enum class LayoutCause : uint8_t {
  empty,          // never written (all zero)
  truncated,      // fewer bytes than the header or the layout needs
  bad_magic,      // not a shoal checkpoint version
  bad_format,     // a format version or checksum kind this build does not read
  unsealed,       // being written, or abandoned mid-save
  malformed,      // a field out of range: names, counts, offsets, sizes, reserved bytes
  meta_checksum,  // header or table changed after sealing
  data_checksum,  // a buffer's bytes changed after sealing
};
inline constexpr size_t kLayoutCauses = 8;
std::string_view name(LayoutCause c);

struct LayoutError {
  LayoutCause cause;
  std::string detail;
};

struct BufferInfo {
  std::string name;
  uint64_t offset = 0;
  uint64_t size = 0;
  uint32_t checksum = 0;
};

struct VersionInfo {
  VersionIdentity id;
  VersionState state = VersionState::empty;
  uint64_t data_offset = 0;
  uint64_t total_bytes = 0;
  std::vector<BufferInfo> buffers;
};

enum class DataCheck { verify, skip };

// Validates a sealed version: structure, meta checksum and (unless skipped) every buffer's checksum.
Result<VersionInfo, LayoutError> decode_version(std::span<const std::byte> segment,
                                                DataCheck check = DataCheck::verify);

// Validates a sealed version from its prefix [0, data_offset) alone: header, table, meta checksum and
// state; none of the data is read or needed (total_bytes may exceed prefix.size()). What a receiver
// checks before the buffers arrive. Refused as truncated when prefix holds fewer than data_offset bytes.
Result<VersionInfo, LayoutError> decode_prefix(std::span<const std::byte> prefix);

// From a version's first kHeaderBytes alone, the length of its prefix (its data_offset), so that a
// receiver knows how much to read before decode_prefix. Checks the magic, format, buffer count and
// that the data offset is canonical and at most kMaxPrefixBytes; trusts nothing else yet.
Result<uint64_t, LayoutError> prefix_bytes(std::span<const std::byte> first_header);

// The state word, loaded with acquire ordering (empty when the segment is too short for a header).
VersionState load_state(std::span<const std::byte> segment);

}  // namespace shoal::ckpt

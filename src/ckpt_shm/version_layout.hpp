// The on-segment format of one checkpoint version: a fixed header, a table of buffers, then the
// buffers' bytes. Encoding writes it in place; decoding trusts none of it (a crash, a stray write or
// a bad replica can leave anything there) and refuses with a cause instead of crashing.
#pragma once

#include <cstddef>
#include <cstdint>
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
// Sealing order: buffer checksums, then the meta checksum (header with state and meta_checksum
// zeroed, followed by the table), then `state` flips from writing to sealed behind a release fence.
// A crash at any point before the flip leaves the version unsealed, and unsealed is never returned.
inline constexpr uint32_t kFormatVersion = 1;
inline constexpr size_t kHeaderBytes = 256;
inline constexpr size_t kEntryBytes = 128;
inline constexpr size_t kDataAlignment = 4096;   // page aligned: pinnable for cudaMemcpy
inline constexpr size_t kBufferAlignment = 256;  // what cudaMalloc guarantees, and a cache-line multiple
inline constexpr size_t kMaxBufferNameBytes = 103;
inline constexpr size_t kMaxBuffers = 1u << 20;
inline constexpr uint32_t kChecksumCrc32c = 1;

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

// The state word, loaded with acquire ordering (empty when the segment is too short for a header).
VersionState load_state(std::span<const std::byte> segment);

}  // namespace shoal::ckpt

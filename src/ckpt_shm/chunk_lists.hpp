// The chunk crc lists a segment keeps after its version: for every buffer, the crc32c of each of its
// 64 KiB chunks, the values its sealed checksum folds (checksum.hpp). A ranged read checks a list
// against the sealed checksum (4 bytes per 64 KiB) instead of reading the whole buffer to make it, then
// only the chunks it copies against the list; a server sends the list as it is kept.
//
// Outside the version: the lists start at its end rounded up to a cache line and are not part of its
// format, its stream, its persisted file or its meta checksum. A list is advisory: it is used only when
// it folds to the buffer's sealed checksum, so a segment without room for them, one written by a build
// that keeps none, a list left from an older version in a reused segment or one a stray write changed
// all mean the same: the reader computes that buffer's list from its bytes, as it did before lists were
// kept. Nothing is trusted more than before: the sealed checksum vouches for the list, the list for each
// chunk, exactly as when the reader computed the list itself.
//
// Who writes them: a save (RankStore, as write_buffer copies, or at commit for bytes written otherwise),
// and a receiver into a segment (VersionReceiver::attach: replicas), as each chunk is verified.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "ckpt_shm/version_layout.hpp"

namespace shoal::ckpt {

class ChunkLists {
 public:
  // For a version of `total_bytes` bytes whose buffers have these sizes (table order).
  ChunkLists(uint64_t total_bytes, std::span<const uint64_t> buffer_sizes);
  explicit ChunkLists(const VersionInfo& info);

  // The bytes a segment needs to hold the version and its lists.
  uint64_t segment_bytes() const { return begin_ + 4 * starts_.back(); }
  // Whether a segment of this many bytes has room for the lists.
  bool fit(uint64_t segment_size) const { return segment_size >= segment_bytes(); }
  // Buffer i's list (one 4-byte value per chunk) in `segment`, where to write it; nullptr when the
  // segment has no room for the lists. Little-endian, as the whole format (a big-endian host's lists
  // never fold to the sealed checksum there, and are recomputed).
  uint32_t* values(std::span<std::byte> segment, size_t buffer) const;
  // Buffer i's list as `segment` keeps it, when it is there and folds to `checksum`; nullopt otherwise.
  std::optional<std::vector<uint32_t>> kept(std::span<const std::byte> segment, size_t buffer,
                                            uint32_t checksum) const;

 private:
  uint64_t begin_ = 0;
  std::vector<uint64_t> starts_;  // buffer i's first value is value starts_[i]; starts_.back(): all values
};

// The bytes a segment needs for a version of these buffers laid out by `plan`, and their lists.
uint64_t segment_bytes_for(std::span<const BufferSpec> buffers, const LayoutPlan& plan);
// The same for a version already described.
uint64_t segment_bytes_for(const VersionInfo& info);

// Buffer i's list: the one `segment` keeps when it folds to the sealed checksum, else computed from the
// buffer's bytes (chunk_crcs; the caller then compares it with the checksum as before).
std::vector<uint32_t> kept_or_computed_crcs(const ChunkLists& lists, std::span<const std::byte> segment,
                                            const BufferInfo& buffer, size_t index);

}  // namespace shoal::ckpt

// Where a segment keeps its buffers' chunk crc lists, and reading them back (chunk_lists.hpp).
#include "ckpt_shm/chunk_lists.hpp"

#include <cstring>

#include "ckpt_shm/chunk_ranges.hpp"

namespace shoal::ckpt {
namespace {

constexpr uint64_t kListAlignment = 64;

uint64_t lists_begin(uint64_t total_bytes) {
  return total_bytes > UINT64_MAX - kListAlignment ? UINT64_MAX
                                                   : (total_bytes + kListAlignment - 1) / kListAlignment * kListAlignment;
}

std::vector<uint64_t> sizes_of(const VersionInfo& info) {
  std::vector<uint64_t> sizes;
  sizes.reserve(info.buffers.size());
  for (const auto& b : info.buffers) sizes.push_back(b.size);
  return sizes;
}

}  // namespace

ChunkLists::ChunkLists(uint64_t total_bytes, std::span<const uint64_t> buffer_sizes) : begin_(lists_begin(total_bytes)) {
  starts_.reserve(buffer_sizes.size() + 1);
  uint64_t at = 0;
  for (const uint64_t size : buffer_sizes) {
    starts_.push_back(at);
    at += chunk_count(size);
  }
  starts_.push_back(at);
}

ChunkLists::ChunkLists(const VersionInfo& info) : ChunkLists(info.total_bytes, sizes_of(info)) {}

uint32_t* ChunkLists::values(std::span<std::byte> segment, size_t buffer) const {
  if (!fit(segment.size()) || buffer + 1 >= starts_.size()) return nullptr;
  // begin_ is a multiple of 64 and segments are page aligned: the values are aligned 4-byte words.
  return reinterpret_cast<uint32_t*>(segment.data() + begin_) + starts_[buffer];
}

std::optional<std::vector<uint32_t>> ChunkLists::kept(std::span<const std::byte> segment, size_t buffer,
                                                      uint32_t checksum) const {
  if (!fit(segment.size()) || buffer + 1 >= starts_.size()) return std::nullopt;
  const uint64_t first = starts_[buffer];
  const uint64_t count = starts_[buffer + 1] - first;
  auto list = decode_chunk_crcs(segment.subspan(begin_ + 4 * first, 4 * count));
  if (!chunk_crcs_match(list, checksum)) return std::nullopt;
  return list;
}

uint64_t segment_bytes_for(std::span<const BufferSpec> buffers, const LayoutPlan& plan) {
  std::vector<uint64_t> sizes;
  sizes.reserve(buffers.size());
  for (const auto& b : buffers) sizes.push_back(b.bytes);
  return ChunkLists(plan.total_bytes, sizes).segment_bytes();
}

uint64_t segment_bytes_for(const VersionInfo& info) { return ChunkLists(info).segment_bytes(); }

std::vector<uint32_t> kept_or_computed_crcs(const ChunkLists& lists, std::span<const std::byte> segment,
                                            const BufferInfo& buffer, size_t index) {
  if (auto kept = lists.kept(segment, index, buffer.checksum)) return std::move(*kept);
  if (buffer.offset > segment.size() || buffer.size > segment.size() - buffer.offset) return {};
  return chunk_crcs(segment.subspan(buffer.offset, buffer.size));
}

}  // namespace shoal::ckpt

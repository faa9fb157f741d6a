// Ranged reads from this host's memory or a peer's agent, verified chunk by chunk.
#include "session/range_reading.hpp"

#include <algorithm>
#include <cstring>

#include "ckpt_service/ranged_transfer.hpp"
#include "ckpt_shm/chunk_lists.hpp"
#include "ckpt_shm/held_scan.hpp"
#include "ckpt_shm/shm_segment.hpp"

namespace shoal::session {
namespace {

std::vector<uint64_t> sizes_of(const ckpt::VersionInfo& info) {
  std::vector<uint64_t> sizes;
  for (const auto& b : info.buffers) sizes.push_back(b.size);
  return sizes;
}

const std::vector<ByteRange>& ranges_of(const RangedRead& read) {
  static const std::vector<ByteRange> none;
  return read.ranges != nullptr ? *read.ranges : none;
}

// One mapped copy: the chunk crc lists of the buffers read (as the segment keeps them after the version,
// else computed from the buffer: chunk_lists.hpp), checked against the sealed checksums, then
// each run copied out of the segment in slices and every chunk of the copy checked against its crc
// before it is scattered (a save that reuses the slot meanwhile is caught by the check of the copy).
RangedResult read_segment(const RangedRead& read, std::span<const std::byte> bytes, const std::string& name) {
  auto info = ckpt::decode_version(bytes, ckpt::DataCheck::skip);
  if (!info || info->id.job != read.job || info->id.rank != read.rank || info->id.step != read.step) {
    return {RangedOutcome::not_held, name + " changed meanwhile or does not decode", std::nullopt};
  }
  const auto& ranges = ranges_of(read);
  auto resolved = resolve_ranges(*info, ranges);
  if (!resolved) return {RangedOutcome::bad_request, resolved.error().message, std::nullopt};
  auto runs = ckpt::plan_chunk_runs(sizes_of(*info), *resolved);
  if (!runs) return {RangedOutcome::bad_request, runs.error().message, std::nullopt};
  constexpr uint64_t kSliceChunks = ckpt_service::kVerifySliceChunks;
  std::vector<std::byte> scratch;
  std::vector<uint32_t> crcs;
  std::vector<uint32_t> copied;  // the crcs of the chunks as copied out
  const ckpt::ChunkLists lists(*info);
  for (size_t i = 0; i < runs->size(); ++i) {
    const auto& run = (*runs)[i];
    const auto& b = info->buffers[run.buffer];
    if (b.offset + b.size > bytes.size()) return {RangedOutcome::refused, name + " is shorter than its table", {}};
    const auto buffer = bytes.subspan(b.offset, b.size);
    if (i == 0 || (*runs)[i - 1].buffer != run.buffer) {
      crcs = ckpt::kept_or_computed_crcs(lists, bytes, b, run.buffer);
      if (!ckpt::chunk_crcs_match(crcs, b.checksum)) {
        return {RangedOutcome::refused, "buffer '" + b.name + "' of " + name + " does not match its checksum", {}};
      }
    }
    for (uint64_t c = run.first_chunk; c < run.first_chunk + run.chunks; c += kSliceChunks) {
      const ckpt::ChunkRun slice{run.buffer, c, std::min(kSliceChunks, run.first_chunk + run.chunks - c)};
      const auto span = ckpt::run_bytes(slice, b.size);
      scratch.resize(span.bytes);
      copied.resize(slice.chunks);
      ckpt::chunk_crc_values(buffer.subspan(span.offset, span.bytes), copied.data(), scratch.data());
      for (uint64_t k = 0; k < slice.chunks; ++k) {
        if (copied[k] != crcs[c + k]) {
          return {RangedOutcome::refused,
                  "chunk " + std::to_string(c + k) + " of buffer '" + b.name + "' of " + name + " changed meanwhile",
                  {}};
        }
      }
      scatter_piece(*resolved, ranges, run.buffer, span.offset, scratch);
    }
  }
  return {RangedOutcome::read, "", std::move(*info)};
}

}  // namespace

Result<std::vector<ckpt::BufferByteRange>> resolve_ranges(const ckpt::VersionInfo& info,
                                                          const std::vector<ByteRange>& ranges) {
  if (ranges.size() > ckpt::kMaxReadRanges) {
    return fail("a read of " + std::to_string(ranges.size()) + " ranges; at most " +
                std::to_string(ckpt::kMaxReadRanges) + " at once");
  }
  std::vector<ckpt::BufferByteRange> out;
  out.reserve(ranges.size());
  for (size_t i = 0; i < ranges.size(); ++i) {
    const auto& r = ranges[i];
    const auto it = std::find_if(info.buffers.begin(), info.buffers.end(),
                                 [&](const ckpt::BufferInfo& b) { return b.name == r.buffer; });
    if (it == info.buffers.end()) {
      return fail("range " + std::to_string(i) + " names buffer '" + r.buffer + "', which rank " +
                  std::to_string(info.id.rank) + "'s version of step " + std::to_string(info.id.step) +
                  " does not have");
    }
    if (r.offset > it->size || r.bytes > it->size - r.offset) {
      return fail("range " + std::to_string(i) + " (offset " + std::to_string(r.offset) + ", " +
                  std::to_string(r.bytes) + " bytes) ends past buffer '" + r.buffer + "' of " +
                  std::to_string(it->size) + " bytes");
    }
    if (r.bytes > 0 && r.into == nullptr) return fail("range " + std::to_string(i) + " has no destination");
    out.push_back({static_cast<uint32_t>(it - info.buffers.begin()), r.offset, r.bytes});
  }
  return out;
}

void scatter_piece(const std::vector<ckpt::BufferByteRange>& resolved, const std::vector<ByteRange>& ranges,
                   uint32_t buffer, uint64_t offset, std::span<const std::byte> piece) {
  const uint64_t end = offset + piece.size();
  for (size_t i = 0; i < resolved.size(); ++i) {
    const auto& r = resolved[i];
    if (r.buffer != buffer || r.bytes == 0) continue;
    const uint64_t from = std::max(offset, r.offset);
    const uint64_t to = std::min(end, r.offset + r.bytes);
    if (from >= to) continue;
    std::memcpy(ranges[i].into + (from - r.offset), piece.data() + (from - offset), to - from);
  }
}

RangedResult read_ranges_local(const RangedRead& read, const std::string& store) {
  RangedResult last;
  for (const auto& h : ckpt::scan_held(store)) {
    if (!h.version || h.version->id.job != read.job || h.version->id.rank != read.rank ||
        h.version->id.step != read.step) {
      continue;
    }
    // Only the table wanted: the scan decoded it from the segment's header (sealed, checked) already.
    if (ranges_of(read).empty()) return {RangedOutcome::read, "", std::move(*h.version)};
    // Mapped without faulting every page in first: a ranged read touches a part of the segment.
    auto seg = ckpt::ShmSegment::open_for_reading(h.segment);
    if (!seg) continue;
    auto r = read_segment(read, std::span<const std::byte>(seg->bytes()), h.segment);
    if (r.outcome == RangedOutcome::read || r.outcome == RangedOutcome::bad_request) return r;
    if (last.outcome != RangedOutcome::refused) last = std::move(r);
  }
  return last;
}

RangedResult read_ranges_peer(const RangedRead& read, const ckpt_service::TransferPeer& peer, uint64_t max_bytes) {
  const auto& ranges = ranges_of(read);
  std::vector<ckpt::BufferByteRange> resolved;
  std::optional<std::string> bad;
  const auto plan = [&](const ckpt::VersionInfo& info) -> Result<std::vector<ckpt::ChunkRun>> {
    auto r = resolve_ranges(info, ranges);
    if (!r) {
      bad = r.error().message;
      return fail(*bad);
    }
    resolved = std::move(*r);
    auto runs = ckpt::plan_chunk_runs(sizes_of(info), resolved);
    if (!runs) bad = runs.error().message;
    return runs;
  };
  const auto sink = [&](uint32_t buffer, uint64_t offset, std::span<const std::byte> piece) {
    scatter_piece(resolved, ranges, buffer, offset, piece);
  };
  ckpt_service::TransferLimits limits;
  limits.max_stream_bytes = max_bytes;
  auto got = ckpt_service::fetch_ranges(peer, read.job, read.rank, read.step, plan, sink, limits);
  if (got) return {RangedOutcome::read, "", std::move(*got)};
  if (bad) return {RangedOutcome::bad_request, *bad, std::nullopt};
  return {got.error().refused ? RangedOutcome::refused : RangedOutcome::not_held, got.error().message, std::nullopt};
}

}  // namespace shoal::session

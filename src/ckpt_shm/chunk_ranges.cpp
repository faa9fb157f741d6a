// Chunk arithmetic of ranged reads: plans, checks, stream lengths, chunk checksum lists.
#include "ckpt_shm/chunk_ranges.hpp"

#include <algorithm>

namespace shoal::ckpt {
namespace {

constexpr uint64_t kChunk = kChecksumChunkBytes;

std::string describe(size_t i, const BufferByteRange& r) {
  return "range " + std::to_string(i) + " (buffer " + std::to_string(r.buffer) + ", offset " +
         std::to_string(r.offset) + ", " + std::to_string(r.bytes) + " bytes)";
}

}  // namespace

uint64_t chunk_count(uint64_t bytes) { return bytes / kChunk + (bytes % kChunk != 0 ? 1 : 0); }

RunBytes run_bytes(const ChunkRun& run, uint64_t buffer_bytes) {
  const uint64_t begin = run.first_chunk * kChunk;
  const uint64_t end = std::min(buffer_bytes, (run.first_chunk + run.chunks) * kChunk);
  return {begin, end - begin};
}

Result<std::vector<ChunkRun>> plan_chunk_runs(std::span<const uint64_t> buffer_sizes,
                                              std::span<const BufferByteRange> ranges) {
  if (ranges.size() > kMaxReadRanges) {
    return fail("a read of " + std::to_string(ranges.size()) + " ranges; at most " + std::to_string(kMaxReadRanges) +
                " at once");
  }
  std::vector<ChunkRun> wanted;
  for (size_t i = 0; i < ranges.size(); ++i) {
    const auto& r = ranges[i];
    if (r.buffer >= buffer_sizes.size()) {
      return fail(describe(i, r) + " names a buffer the version does not have (it has " +
                  std::to_string(buffer_sizes.size()) + ")");
    }
    const uint64_t size = buffer_sizes[r.buffer];
    if (r.offset > size || r.bytes > size - r.offset) {
      return fail(describe(i, r) + " ends past the buffer's " + std::to_string(size) + " bytes");
    }
    if (r.bytes == 0) continue;
    const uint64_t first = r.offset / kChunk;
    const uint64_t last = (r.offset + r.bytes - 1) / kChunk;
    wanted.push_back({r.buffer, first, last - first + 1});
  }
  std::sort(wanted.begin(), wanted.end(), [](const ChunkRun& a, const ChunkRun& b) {
    return a.buffer != b.buffer ? a.buffer < b.buffer : a.first_chunk < b.first_chunk;
  });
  std::vector<ChunkRun> runs;
  for (const auto& w : wanted) {
    if (!runs.empty() && runs.back().buffer == w.buffer &&
        w.first_chunk <= runs.back().first_chunk + runs.back().chunks) {
      auto& back = runs.back();
      back.chunks = std::max(back.first_chunk + back.chunks, w.first_chunk + w.chunks) - back.first_chunk;
    } else {
      runs.push_back(w);
    }
  }
  return runs;
}

Status check_chunk_runs(std::span<const uint64_t> buffer_sizes, std::span<const ChunkRun> runs) {
  if (runs.size() > kMaxReadRanges) {
    return fail(std::to_string(runs.size()) + " chunk runs; at most " + std::to_string(kMaxReadRanges));
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    const std::string which = "chunk run " + std::to_string(i) + " (buffer " + std::to_string(r.buffer) +
                              ", chunks " + std::to_string(r.first_chunk) + "+" + std::to_string(r.chunks) + ")";
    if (r.buffer >= buffer_sizes.size()) return fail(which + " names a buffer the version does not have");
    const uint64_t n = chunk_count(buffer_sizes[r.buffer]);
    if (r.chunks == 0 || r.first_chunk >= n || r.chunks > n - r.first_chunk) {
      return fail(which + " is empty or ends past the buffer's " + std::to_string(n) + " chunks");
    }
    if (i > 0) {
      const auto& p = runs[i - 1];
      if (r.buffer < p.buffer || (r.buffer == p.buffer && r.first_chunk < p.first_chunk + p.chunks)) {
        return fail(which + " is out of order or overlaps the run before it");
      }
    }
  }
  return Ok{};
}

uint64_t ranged_stream_bytes(std::span<const uint64_t> buffer_sizes, std::span<const ChunkRun> runs) {
  uint64_t total = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const uint64_t size = buffer_sizes[runs[i].buffer];
    if (i == 0 || runs[i - 1].buffer != runs[i].buffer) total += 4 * chunk_count(size);
    total += run_bytes(runs[i], size).bytes;
  }
  return total;
}

std::vector<uint32_t> chunk_crcs(std::span<const std::byte> bytes) {
  std::vector<uint32_t> out(chunk_count(bytes.size()));
  chunk_crc_values(bytes, out.data());
  return out;
}

std::vector<std::byte> encode_chunk_crcs(std::span<const uint32_t> crcs) {
  std::vector<std::byte> out(crcs.size() * 4);
  for (size_t i = 0; i < crcs.size(); ++i) {
    for (size_t b = 0; b < 4; ++b) out[4 * i + b] = static_cast<std::byte>((crcs[i] >> (8 * b)) & 0xff);
  }
  return out;
}

std::vector<uint32_t> decode_chunk_crcs(std::span<const std::byte> bytes) {
  std::vector<uint32_t> out(bytes.size() / 4);
  for (size_t i = 0; i < out.size(); ++i) {
    uint32_t v = 0;
    for (size_t b = 0; b < 4; ++b) v |= static_cast<uint32_t>(bytes[4 * i + b]) << (8 * b);
    out[i] = v;
  }
  return out;
}

uint32_t checksum_of_chunk_crcs(std::span<const uint32_t> crcs) { return crc32c(encode_chunk_crcs(crcs)); }

bool chunk_crcs_match(std::span<const uint32_t> crcs, uint32_t checksum) {
  return checksum_of_chunk_crcs(crcs) == checksum;
}

}  // namespace shoal::ckpt

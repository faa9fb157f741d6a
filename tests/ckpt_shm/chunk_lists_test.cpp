// The chunk crc lists a segment keeps after its version: the values copy_with_checksum and BufferChecksum
// write are the chunks' crcs; where the lists lie; a kept list is used only when it folds to the sealed
// checksum (a damaged, stale or missing one is recomputed); a save and a receive into a segment with room
// keep them, and a receive into one without room still completes.
#include "ckpt_shm/chunk_lists.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <vector>

#include "ckpt_pattern.hpp"
#include "ckpt_shm/checksum.hpp"
#include "ckpt_shm/chunk_ranges.hpp"
#include "ckpt_shm/rank_store.hpp"
#include "ckpt_shm/version_stream.hpp"
#include "shm_test_job.hpp"

using namespace shoal::ckpt;
using shoal::ckpt::test::fill_pattern;
using shoal::ckpt::test::Segment;
using shoal::ckpt::test::ShmTestJob;

namespace {

constexpr size_t K = kChecksumChunkBytes;
// Below and above a chunk, a group of three and the size from which two threads split the work.
const std::vector<size_t> kSizes = {0, 1, K - 1, K, K + 1, 3 * K + 5, 7 * K, kParallelChecksumBytes + 3 * K + 11};

std::vector<std::byte> random_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> v(n);
  for (auto& b : v) b = std::byte(static_cast<uint8_t>(rng()));
  return v;
}

const std::vector<BufferSpec> kBuffers = {{"weights", 3 * K + 17}, {"empty", 0}, {"bias", K}, {"rng", 5}};

// A sealed version of kBuffers in a segment of `room` extra bytes after it, without lists.
struct Source {
  explicit Source(size_t room = 0) : plan(*plan_layout(kBuffers)), seg(plan.total_bytes + room) {
    REQUIRE(begin_version(seg.bytes, VersionIdentity{"job-l", 1, 5, 2, 3}, kBuffers, plan).ok());
    for (size_t i = 0; i < kBuffers.size(); ++i) fill_pattern(seg.bytes.subspan(plan.offsets[i], kBuffers[i].bytes), 5, i);
    REQUIRE(seal_version(seg.bytes).ok());
    info = *decode_version(seg.bytes);
  }
  LayoutPlan plan;
  Segment seg;
  VersionInfo info;
};

}  // namespace

TEST_CASE("copy_with_checksum and BufferChecksum write each chunk's crc, the values the checksum folds") {
  for (const size_t n : kSizes) {
    CAPTURE(n);
    const auto src = random_bytes(n, n + 1);
    const auto expected = chunk_crcs(src);
    REQUIRE(expected.size() == chunk_count(n));
    std::vector<std::byte> dst(n);
    std::vector<uint32_t> values(expected.size() + 1, 0xDEADBEEF);
    const uint32_t sum = copy_with_checksum(dst, src, values.data());
    CHECK(sum == buffer_checksum(src));
    CHECK(std::vector<uint32_t>(values.begin(), values.end() - 1) == expected);
    CHECK(values.back() == 0xDEADBEEF);  // nothing past the last chunk
    CHECK(checksum_of_chunk_crcs(expected) == sum);
    // Streamed in uneven pieces, with the partial last chunk's value written at finish().
    for (const size_t piece : {size_t{1000}, K / 2 + 3, 2 * K + 1, n + 1}) {
      CAPTURE(piece);
      std::vector<uint32_t> streamed(expected.size(), 0);
      BufferChecksum running(streamed.data());
      for (size_t at = 0; at < n; at += piece) running.update(std::span(src).subspan(at, std::min(piece, n - at)));
      CHECK(running.finish() == sum);
      CHECK(streamed == expected);
    }
  }
}

TEST_CASE("the lists start after the version on a cache line, one 4-byte value per chunk of every buffer") {
  const std::vector<uint64_t> sizes = {3 * K + 17, 0, K, 5};
  const ChunkLists lists(100000, sizes);
  CHECK(lists.segment_bytes() == 100032 + 4 * (4 + 0 + 1 + 1));
  CHECK(lists.fit(lists.segment_bytes()));
  CHECK_FALSE(lists.fit(lists.segment_bytes() - 1));
  Segment seg(lists.segment_bytes());
  CHECK(reinterpret_cast<std::byte*>(lists.values(seg.bytes, 0)) == seg.bytes.data() + 100032);
  CHECK(reinterpret_cast<std::byte*>(lists.values(seg.bytes, 2)) == seg.bytes.data() + 100032 + 16);
  CHECK(reinterpret_cast<std::byte*>(lists.values(seg.bytes, 3)) == seg.bytes.data() + 100032 + 20);
  CHECK(lists.values(seg.bytes, 4) == nullptr);                      // no such buffer
  CHECK(lists.values(seg.bytes.first(100031), 0) == nullptr);        // no room
  CHECK(segment_bytes_for(kBuffers, *plan_layout(kBuffers)) ==
        ChunkLists(plan_layout(kBuffers)->total_bytes, std::vector<uint64_t>{3 * K + 17, 0, K, 5}).segment_bytes());
}

TEST_CASE("a kept list is used only when it folds to the sealed checksum; otherwise the buffer's is computed") {
  const ChunkLists probe(plan_layout(kBuffers)->total_bytes, std::vector<uint64_t>{3 * K + 17, 0, K, 5});
  Source source(probe.segment_bytes() - plan_layout(kBuffers)->total_bytes);
  const ChunkLists lists(source.info);
  const auto& b = source.info.buffers[0];
  const auto truth = chunk_crcs(source.seg.bytes.subspan(b.offset, b.size));
  // No lists written yet (zeros): not kept, computed.
  CHECK_FALSE(lists.kept(source.seg.bytes, 0, b.checksum).has_value());
  CHECK(kept_or_computed_crcs(lists, source.seg.bytes, b, 0) == truth);
  // Written: kept, and the same.
  std::memcpy(lists.values(source.seg.bytes, 0), truth.data(), 4 * truth.size());
  REQUIRE(lists.kept(source.seg.bytes, 0, b.checksum).has_value());
  CHECK(*lists.kept(source.seg.bytes, 0, b.checksum) == truth);
  // Another buffer's checksum does not vouch for it.
  CHECK_FALSE(lists.kept(source.seg.bytes, 0, source.info.buffers[2].checksum).has_value());
  // One value changed (a stray write, a list left by an older version): refused, recomputed.
  lists.values(source.seg.bytes, 0)[1] ^= 1;
  CHECK_FALSE(lists.kept(source.seg.bytes, 0, b.checksum).has_value());
  CHECK(kept_or_computed_crcs(lists, source.seg.bytes, b, 0) == truth);
  // A segment cut short of the lists: computed.
  CHECK_FALSE(lists.kept(source.seg.bytes.first(source.info.total_bytes), 0, b.checksum).has_value());
  CHECK(kept_or_computed_crcs(lists, source.seg.bytes.first(source.info.total_bytes), b, 0) == truth);
}

TEST_CASE("a receive into a segment with room keeps every buffer's list; without room it completes all the same") {
  Source source;
  std::vector<std::byte> stream;
  for (auto piece : stream_pieces(source.seg.bytes, source.info)) stream.insert(stream.end(), piece.begin(), piece.end());
  for (const bool room : {true, false}) {
    CAPTURE(room);
    VersionReceiver r;
    Segment dest(room ? segment_bytes_for(source.info) : source.info.total_bytes);
    size_t at = 0;
    while (!r.complete()) {
      auto into = r.next();
      REQUIRE_FALSE(into.empty());
      const size_t n = std::min({into.size(), stream.size() - at, size_t{40000}});
      std::memcpy(into.data(), stream.data() + at, n);
      at += n;
      auto p = r.advance(n);
      REQUIRE(p.ok());
      if (*p == VersionReceiver::Progress::need_destination) REQUIRE(r.attach(dest.bytes).ok());
    }
    const ChunkLists lists(source.info);
    for (size_t i = 0; i < source.info.buffers.size(); ++i) {
      const auto& b = source.info.buffers[i];
      CHECK(lists.kept(dest.bytes, i, b.checksum).has_value() == room);
      CHECK(kept_or_computed_crcs(lists, dest.bytes, b, i) == chunk_crcs(source.seg.bytes.subspan(b.offset, b.size)));
    }
  }
}

TEST_CASE("a save keeps the lists of buffers copied by write_buffer and of buffers written through their spans") {
  ShmTestJob job("lists");
  auto store = RankStore::open(RankStoreConfig{job.name(), 0, 2});
  REQUIRE(store.ok());
  const std::vector<BufferSpec> buffers = {{"weights", 5 * K + 3}, {"optimizer", 2 * K}, {"meta", 16}};
  auto spans = store->begin_save(3, buffers);
  REQUIRE(spans.ok());
  std::vector<std::byte> weights(buffers[0].bytes);
  fill_pattern(weights, 3, 0);
  REQUIRE(store->write_buffer(0, weights).ok());
  fill_pattern((*spans)[1].bytes, 3, 1);
  fill_pattern((*spans)[2].bytes, 3, 2);
  REQUIRE(store->commit().ok());
  auto segment = store->sealed_segment(3);
  REQUIRE(segment.has_value());
  auto info = decode_version(*segment);
  REQUIRE(info.ok());
  const ChunkLists lists(*info);
  REQUIRE(lists.fit(segment->size()));
  for (size_t i = 0; i < buffers.size(); ++i) {
    const auto& b = info->buffers[i];
    auto kept = lists.kept(*segment, i, b.checksum);
    REQUIRE(kept.has_value());
    CHECK(*kept == chunk_crcs(segment->subspan(b.offset, b.size)));
  }
}

// Ranged reads' chunk arithmetic as pure functions: which chunk runs cover a set of byte ranges, what a
// server refuses of a reader's runs, the ranged stream's length, and the chunk-crc list's check
// against the sealed buffer checksum (a forged list or a changed chunk does not pass).
#include "ckpt_shm/chunk_ranges.hpp"

#include <doctest/doctest.h>

#include <random>
#include <vector>

using namespace shoal::ckpt;

namespace {

constexpr uint64_t K = kChecksumChunkBytes;

struct PlanCase {
  const char* what;
  std::vector<uint64_t> sizes;
  std::vector<BufferByteRange> ranges;
  std::vector<ChunkRun> runs;  // expected
  uint64_t stream_bytes;       // expected ranged_stream_bytes
};

}  // namespace

TEST_CASE("the chunk runs of a set of ranges: aligned, merged, sorted, and the stream's length") {
  const std::vector<PlanCase> cases = {
      {"no ranges", {K}, {}, {}, 0},
      {"an empty range needs nothing", {K}, {{0, 5, 0}}, {}, 0},
      {"one byte", {3 * K}, {{0, K + 7, 1}}, {{0, 1, 1}}, 3 * 4 + K},
      {"a range across a chunk edge", {3 * K}, {{0, K - 1, 2}}, {{0, 0, 2}}, 3 * 4 + 2 * K},
      {"the short last chunk", {2 * K + 10}, {{0, 2 * K, 10}}, {{0, 2, 1}}, 3 * 4 + 10},
      {"a whole buffer", {2 * K + 10}, {{0, 0, 2 * K + 10}}, {{0, 0, 3}}, 3 * 4 + 2 * K + 10},
      {"two ranges in one chunk merge", {K}, {{0, 0, 5}, {0, 100, 5}}, {{0, 0, 1}}, 4 + K},
      {"touching chunks merge", {4 * K}, {{0, 2 * K, 1}, {0, K, 1}}, {{0, 1, 2}}, 4 * 4 + 2 * K},
      {"a gap keeps two runs, one crc list", {4 * K}, {{0, 3 * K, 1}, {0, 0, 1}}, {{0, 0, 1}, {0, 3, 1}},
       4 * 4 + 2 * K},
      {"buffers sorted, each with its crcs", {K, 10}, {{1, 0, 10}, {0, 0, 1}}, {{0, 0, 1}, {1, 0, 1}},
       4 + K + 4 + 10},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    auto runs = plan_chunk_runs(c.sizes, c.ranges);
    REQUIRE(runs);
    CHECK(*runs == c.runs);
    CHECK(check_chunk_runs(c.sizes, *runs));
    CHECK(ranged_stream_bytes(c.sizes, *runs) == c.stream_bytes);
  }
}

TEST_CASE("ranges naming an unknown buffer or ending past their buffer are refused, naming the range") {
  const std::vector<uint64_t> sizes = {100, 200};
  const std::vector<std::pair<BufferByteRange, const char*>> bad = {
      {{2, 0, 1}, "does not have"},
      {{0, 101, 0}, "ends past"},
      {{0, 50, 51}, "ends past"},
      {{1, 1, UINT64_MAX}, "ends past"},
      {{0, UINT64_MAX, 2}, "ends past"},
  };
  for (const auto& [r, why] : bad) {
    auto runs = plan_chunk_runs(sizes, std::vector<BufferByteRange>{{0, 0, 1}, r});
    REQUIRE_FALSE(runs);
    CHECK(runs.error().message.find("range 1") != std::string::npos);
    CHECK(runs.error().message.find(why) != std::string::npos);
  }
  std::vector<BufferByteRange> many(kMaxReadRanges + 1, BufferByteRange{0, 0, 1});
  CHECK_FALSE(plan_chunk_runs(sizes, many));
}

TEST_CASE("a server refuses runs that are empty, outside their buffer, unordered or overlapping") {
  const std::vector<uint64_t> sizes = {3 * K, K};
  CHECK(check_chunk_runs(sizes, std::vector<ChunkRun>{{0, 0, 1}, {0, 2, 1}, {1, 0, 1}}));
  const std::vector<std::vector<ChunkRun>> bad = {
      {{2, 0, 1}},                    // unknown buffer
      {{0, 0, 0}},                    // empty
      {{0, 3, 1}},                    // past the last chunk
      {{0, 2, 2}},                    // ends past it
      {{0, 1, UINT64_MAX}},           // overflows
      {{0, 1, 1}, {0, 0, 1}},         // out of order
      {{0, 0, 2}, {0, 1, 1}},         // overlapping
      {{1, 0, 1}, {0, 0, 1}},         // buffers out of order
  };
  for (const auto& runs : bad) CHECK_FALSE(check_chunk_runs(sizes, runs));
}

TEST_CASE("a buffer's chunk crcs match its sealed checksum; a forged list or a changed chunk does not") {
  std::mt19937_64 rng(38);
  for (const size_t n : {size_t{0}, size_t{1}, K - 1, K, K + 1, 3 * K + 17}) {
    CAPTURE(n);
    std::vector<std::byte> bytes(n);
    for (auto& b : bytes) b = std::byte(static_cast<uint8_t>(rng()));
    const uint32_t sealed = buffer_checksum(bytes);
    auto crcs = chunk_crcs(bytes);
    CHECK(crcs.size() == chunk_count(n));
    CHECK(chunk_crcs_match(crcs, sealed));
    CHECK(decode_chunk_crcs(encode_chunk_crcs(crcs)) == crcs);
    std::vector<std::byte> copy(n);
    std::vector<uint32_t> copied(crcs.size());
    chunk_crc_values(bytes, copied.data(), copy.data());
    CHECK(copied == crcs);
    CHECK(copy == bytes);
    for (size_t i = 0; i < crcs.size(); ++i) {
      const auto chunk = std::span<const std::byte>(bytes).subspan(i * K, std::min<size_t>(K, n - i * K));
      CHECK(crcs[i] == crc32c_software(chunk));
    }
    if (n == 0) continue;
    auto forged = crcs;
    forged.back() ^= 1;
    CHECK_FALSE(chunk_crcs_match(forged, sealed));
    bytes[n / 2] ^= std::byte{0x40};
    CHECK(crc32c(bytes.data() == nullptr ? std::span<const std::byte>() :
                 std::span<const std::byte>(bytes).subspan(n / 2 / K * K, std::min<size_t>(K, n - n / 2 / K * K))) !=
          crcs[n / 2 / K]);
  }
}

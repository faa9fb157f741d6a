// The on-segment version format: round trips, canonical offsets, and every kind of damage refused with
// its cause, never a crash.
#include "ckpt_shm/version_layout.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <optional>
#include <random>
#include <vector>

#include "ckpt_pattern.hpp"
#include "ckpt_shm/checksum.hpp"

using namespace shoal::ckpt;
using shoal::ckpt::test::fill_pattern;
using shoal::ckpt::test::has_pattern;

namespace {

const std::vector<BufferSpec> kBuffers = {{"model.weight", 1000}, {"optim.exp_avg", 0}, {"rng", 37}};

using Segment = shoal::ckpt::test::Segment;

LayoutPlan plan_of(const std::vector<BufferSpec>& buffers) {
  auto plan = plan_layout(buffers);
  REQUIRE(plan.ok());
  return *plan;
}

// Header offsets the tests below damage on purpose.
constexpr size_t kStepOffset = 120;
constexpr size_t kChecksumKindOffset = 152;
constexpr size_t kWorldOffset = 160;

// Writes and seals step 42 of rank 3 of 8 with the test pattern; returns the plan.
LayoutPlan write_sealed(Segment& seg, const std::vector<BufferSpec>& buffers = kBuffers) {
  const auto plan = plan_of(buffers);
  REQUIRE(begin_version(seg.bytes, VersionIdentity{"job-1", 3, 42, 7, 8}, buffers, plan).ok());
  for (size_t i = 0; i < buffers.size(); ++i) fill_pattern(seg.bytes.subspan(plan.offsets[i], buffers[i].bytes), 42, i);
  REQUIRE(seal_version(seg.bytes).ok());
  return plan;
}

LayoutCause cause_of(std::span<const std::byte> bytes, DataCheck check = DataCheck::verify) {
  auto r = decode_version(bytes, check);
  REQUIRE_FALSE(r.ok());
  return r.error().cause;
}

}  // namespace

TEST_CASE("a sealed version decodes to the identity, buffers and bytes it was written with") {
  Segment seg(plan_of(kBuffers).total_bytes);
  write_sealed(seg);
  auto v = decode_version(seg.bytes);
  REQUIRE(v.ok());
  CHECK(v->id.job == "job-1");
  CHECK(v->id.rank == 3);
  CHECK(v->id.step == 42);
  CHECK(v->id.sequence == 7);
  CHECK(v->id.world == 8);
  CHECK(v->state == VersionState::sealed);
  REQUIRE(v->buffers.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(v->buffers[i].name == kBuffers[i].name);
    CHECK(v->buffers[i].size == kBuffers[i].bytes);
    CHECK(has_pattern(std::span<const std::byte>(seg.bytes).subspan(v->buffers[i].offset, v->buffers[i].size), 42, i));
  }
  CHECK(load_state(seg.bytes) == VersionState::sealed);
}

TEST_CASE("the layout is canonical: page-aligned data, 256-byte aligned buffers, in the order given") {
  const auto plan = plan_of(kBuffers);
  CHECK(plan.data_offset == kDataAlignment);
  REQUIRE(plan.offsets.size() == 3);
  CHECK(plan.offsets[0] == kDataAlignment);
  CHECK(plan.offsets[1] == kDataAlignment + 1024);  // 1000 rounded up to 256
  CHECK(plan.offsets[2] == kDataAlignment + 1024);  // the empty buffer takes no room
  CHECK(plan.total_bytes == kDataAlignment + 1024 + 37);
  // 40 entries no longer fit in the first page after the header.
  std::vector<BufferSpec> many;
  for (int i = 0; i < 40; ++i) many.push_back({"b" + std::to_string(i), 1});
  CHECK(plan_of(many).data_offset == 2 * kDataAlignment);
}

TEST_CASE("plan_layout refuses empty lists, bad names, duplicates and sizes past 2^64") {
  CHECK_FALSE(plan_layout({}).ok());
  CHECK_FALSE(plan_layout(std::vector<BufferSpec>{{"", 1}}).ok());
  CHECK_FALSE(plan_layout(std::vector<BufferSpec>{{std::string(kMaxBufferNameBytes + 1, 'n'), 1}}).ok());
  CHECK(plan_layout(std::vector<BufferSpec>{{std::string(kMaxBufferNameBytes, 'n'), 1}}).ok());
  CHECK_FALSE(plan_layout(std::vector<BufferSpec>{{std::string("a\0b", 3), 1}}).ok());
  auto dup = plan_layout(std::vector<BufferSpec>{{"w", 1}, {"x", 1}, {"w", 2}});
  REQUIRE_FALSE(dup.ok());
  CHECK(dup.error().message.find("'w'") != std::string::npos);
  CHECK_FALSE(plan_layout(std::vector<BufferSpec>{{"a", UINT64_MAX - 100}, {"b", 1000}}).ok());
}

TEST_CASE("begin_version refuses a segment too small for the plan and an invalid job name") {
  const auto plan = plan_of(kBuffers);
  Segment seg(plan.total_bytes);
  CHECK_FALSE(begin_version(seg.bytes.first(plan.total_bytes - 1), {"job-1", 0, 1, 1, 0}, kBuffers, plan).ok());
  CHECK_FALSE(begin_version(seg.bytes, {"job/1", 0, 1, 1, 0}, kBuffers, plan).ok());
}

TEST_CASE("the world size is unknown (0) or larger than the rank, else begin_version and decoding refuse") {
  const auto plan = plan_of(kBuffers);
  Segment seg(plan.total_bytes);
  CHECK_FALSE(begin_version(seg.bytes, {"job-1", 3, 1, 1, 3}, kBuffers, plan).ok());
  CHECK_FALSE(begin_version(seg.bytes, {"job-1", 3, 1, 1, 2}, kBuffers, plan).ok());
  REQUIRE(begin_version(seg.bytes, {"job-1", 3, 1, 1, 0}, kBuffers, plan).ok());
  REQUIRE(seal_version(seg.bytes).ok());
  auto unknown = decode_version(seg.bytes);
  REQUIRE(unknown.ok());
  CHECK(unknown->id.world == 0);
  // A header whose world does not fit its rank does not even seal.
  REQUIRE(begin_version(seg.bytes, {"job-1", 3, 2, 2, 4}, kBuffers, plan).ok());
  const uint32_t bad_world = 2;
  std::memcpy(seg.bytes.data() + kWorldOffset, &bad_world, sizeof bad_world);
  CHECK_FALSE(seal_version(seg.bytes).ok());
}

TEST_CASE("a version that was begun but not sealed is refused as unsealed") {
  const auto plan = plan_of(kBuffers);
  Segment seg(plan.total_bytes);
  REQUIRE(begin_version(seg.bytes, {"job-1", 0, 5, 1, 0}, kBuffers, plan).ok());
  CHECK(load_state(seg.bytes) == VersionState::writing);
  CHECK(cause_of(seg.bytes) == LayoutCause::unsealed);
  CHECK(cause_of(seg.bytes, DataCheck::skip) == LayoutCause::unsealed);
}

TEST_CASE("a sealed version rewritten by a new save is unsealed again until the new seal") {
  Segment seg(plan_of(kBuffers).total_bytes);
  write_sealed(seg);
  REQUIRE(begin_version(seg.bytes, {"job-1", 3, 43, 8, 0}, kBuffers, plan_of(kBuffers)).ok());
  CHECK(cause_of(seg.bytes) == LayoutCause::unsealed);
  REQUIRE(seal_version(seg.bytes).ok());
  auto v = decode_version(seg.bytes);
  REQUIRE(v.ok());
  CHECK(v->id.step == 43);
  CHECK_FALSE(seal_version(seg.bytes).ok());  // sealing twice is a caller's bug, refused
}

TEST_CASE("an all-zero segment is reported empty, a short one truncated, foreign bytes bad_magic") {
  Segment seg(8192);
  CHECK(cause_of(seg.bytes) == LayoutCause::empty);
  CHECK(load_state(seg.bytes) == VersionState::empty);
  CHECK(cause_of(seg.bytes.first(kHeaderBytes - 1)) == LayoutCause::truncated);
  std::memcpy(seg.bytes.data(), "GET / HTTP/1.1\r\n", 16);
  CHECK(cause_of(seg.bytes) == LayoutCause::bad_magic);
}

TEST_CASE("every truncation of a sealed version is refused") {
  const auto plan = plan_of(kBuffers);
  Segment seg(plan.total_bytes);
  write_sealed(seg);
  for (size_t len = 0; len < plan.total_bytes; ++len) {
    auto r = decode_version(seg.bytes.first(len));
    CHECK_FALSE(r.ok());
    if (len >= kHeaderBytes) CHECK(r.error().cause == LayoutCause::truncated);
  }
}

TEST_CASE("a flipped byte in a buffer is refused as data_checksum, and only a data check finds it") {
  const auto plan = plan_of(kBuffers);
  Segment seg(plan.total_bytes);
  write_sealed(seg);
  seg.bytes[plan.offsets[2] + 36] ^= std::byte{0x01};
  CHECK(cause_of(seg.bytes) == LayoutCause::data_checksum);
  CHECK(decode_version(seg.bytes, DataCheck::skip).ok());
}

TEST_CASE("a changed header field of a sealed version is refused as meta_checksum") {
  Segment seg(plan_of(kBuffers).total_bytes);
  write_sealed(seg);
  // The step claims another step than the one sealed.
  seg.bytes[kStepOffset] ^= std::byte{0x01};
  CHECK(cause_of(seg.bytes) == LayoutCause::meta_checksum);
  seg.bytes[kStepOffset] ^= std::byte{0x01};
  REQUIRE(decode_version(seg.bytes).ok());
  seg.bytes[kWorldOffset] ^= std::byte{0x01};
  CHECK(cause_of(seg.bytes) == LayoutCause::meta_checksum);
}

TEST_CASE("a future or past format version and the plain CRC32C checksum kind are refused as bad_format") {
  Segment seg(plan_of(kBuffers).total_bytes);
  write_sealed(seg);
  seg.bytes[8] = std::byte{3};
  CHECK(cause_of(seg.bytes) == LayoutCause::bad_format);
  seg.bytes[8] = std::byte{1};
  CHECK(cause_of(seg.bytes) == LayoutCause::bad_format);
  seg.bytes[8] = std::byte{kFormatVersion};
  REQUIRE(decode_version(seg.bytes).ok());
  seg.bytes[kChecksumKindOffset] = std::byte{1};
  CHECK(cause_of(seg.bytes) == LayoutCause::bad_format);
  CHECK(prefix_bytes(seg.bytes).error().cause == LayoutCause::bad_format);
}

TEST_CASE("buffer checksums are the chunked CRC32C of the buffers' bytes") {
  const std::vector<BufferSpec> buffers = {{"big", 3 * kChecksumChunkBytes + 17}, {"small", 5}};
  const auto plan = plan_of(buffers);
  Segment seg(plan.total_bytes);
  write_sealed(seg, buffers);
  auto v = decode_version(seg.bytes);
  REQUIRE(v.ok());
  for (const auto& b : v->buffers) CHECK(b.checksum == buffer_checksum(seg.bytes.subspan(b.offset, b.size)));
}

TEST_CASE("seal_version takes known checksums as given and computes the others") {
  const auto plan = plan_of(kBuffers);
  Segment seg(plan.total_bytes);
  auto begin = [&](uint64_t step) {
    REQUIRE(begin_version(seg.bytes, {"job-1", 0, step, step, 0}, kBuffers, plan).ok());
    for (size_t i = 0; i < kBuffers.size(); ++i)
      fill_pattern(seg.bytes.subspan(plan.offsets[i], kBuffers[i].bytes), step, i);
  };
  begin(1);
  const uint32_t first = buffer_checksum(seg.bytes.subspan(plan.offsets[0], kBuffers[0].bytes));
  std::vector<std::optional<uint32_t>> known = {first, std::nullopt, std::nullopt};
  REQUIRE(seal_version(seg.bytes, known).ok());
  auto v = decode_version(seg.bytes);
  REQUIRE(v.ok());
  CHECK(v->buffers[0].checksum == first);
  // A known checksum is not recomputed: a wrong one is sealed as is, and the data check finds it.
  begin(2);
  known[2] = 0x12345678u;
  REQUIRE(seal_version(seg.bytes, known).ok());
  CHECK(cause_of(seg.bytes) == LayoutCause::data_checksum);
  // One entry per buffer, or none.
  begin(3);
  known.pop_back();
  CHECK_FALSE(seal_version(seg.bytes, known).ok());
  CHECK(load_state(seg.bytes) == VersionState::writing);
}

TEST_CASE("decode_prefix validates a sealed version from its first data_offset bytes alone") {
  const auto plan = plan_of(kBuffers);
  Segment seg(plan.total_bytes);
  write_sealed(seg);
  // An exact-size copy of the prefix: a sanitizer build catches any read past it.
  const std::vector<std::byte> prefix(seg.bytes.begin(),
                                      seg.bytes.begin() + static_cast<std::ptrdiff_t>(plan.data_offset));
  auto p = decode_prefix(prefix);
  REQUIRE(p.ok());
  auto whole = decode_version(seg.bytes);
  REQUIRE(whole.ok());
  CHECK(p->id.job == whole->id.job);
  CHECK(p->id.step == 42);
  CHECK(p->id.world == 8);
  CHECK(p->data_offset == plan.data_offset);
  CHECK(p->total_bytes == plan.total_bytes);
  REQUIRE(p->buffers.size() == whole->buffers.size());
  for (size_t i = 0; i < p->buffers.size(); ++i) CHECK(p->buffers[i].checksum == whole->buffers[i].checksum);
  // Damaged data does not matter to the prefix; a short prefix, a changed table or no seal do.
  seg.bytes[plan.offsets[0]] ^= std::byte{0x01};
  CHECK(decode_prefix(seg.bytes.first(plan.data_offset)).ok());
  CHECK(decode_prefix(std::span(prefix).first(plan.data_offset - 1)).error().cause == LayoutCause::truncated);
  auto changed = prefix;
  changed[kHeaderBytes + 2] ^= std::byte{0x01};
  CHECK(decode_prefix(changed).error().cause == LayoutCause::meta_checksum);
  REQUIRE(begin_version(seg.bytes, {"job-1", 3, 43, 8, 8}, kBuffers, plan).ok());
  CHECK(decode_prefix(seg.bytes.first(plan.data_offset)).error().cause == LayoutCause::unsealed);
}

TEST_CASE("prefix_bytes reads the prefix length from the header and refuses what it cannot trust") {
  Segment seg(plan_of(kBuffers).total_bytes);
  write_sealed(seg);
  auto n = prefix_bytes(seg.bytes.first(kHeaderBytes));
  REQUIRE(n.ok());
  CHECK(*n == kDataAlignment);
  CHECK(prefix_bytes(seg.bytes.first(kHeaderBytes - 1)).error().cause == LayoutCause::truncated);
  // A buffer count past the limit would claim a prefix of hundreds of MiB, and a data offset that does
  // not follow from the count is not believed.
  const uint32_t huge_count = 1u << 21;
  std::memcpy(seg.bytes.data() + 116, &huge_count, sizeof huge_count);
  CHECK(prefix_bytes(seg.bytes).error().cause == LayoutCause::malformed);
  const uint32_t count = 3;
  std::memcpy(seg.bytes.data() + 116, &count, sizeof count);
  const uint64_t huge_offset = uint64_t{1} << 40;
  std::memcpy(seg.bytes.data() + 136, &huge_offset, sizeof huge_offset);
  CHECK(prefix_bytes(seg.bytes).error().cause == LayoutCause::malformed);
  Segment zero(kHeaderBytes);
  CHECK(prefix_bytes(zero.bytes).error().cause == LayoutCause::empty);
}

TEST_CASE("10,000 mutated headers and tables never crash the decoder and are never accepted") {
  const auto plan = plan_of(kBuffers);
  Segment good(plan.total_bytes);
  write_sealed(good);
  const size_t meta_end = kHeaderBytes + kBuffers.size() * kEntryBytes;
  std::mt19937_64 rng(20261122);
  Segment seg(plan.total_bytes);
  int accepted = 0;
  for (int i = 0; i < 10000; ++i) {
    std::memcpy(seg.bytes.data(), good.bytes.data(), plan.total_bytes);
    // Every byte of the header and table is covered by the state word or the meta checksum.
    const int flips = 1 + static_cast<int>(rng() % 8);
    for (int f = 0; f < flips; ++f) {
      seg.bytes[rng() % meta_end] ^= std::byte(static_cast<uint8_t>(1 + rng() % 255));
    }
    if (decode_version(seg.bytes).ok()) ++accepted;
  }
  CHECK(accepted == 0);
}

TEST_CASE("random headers with a valid magic and random sizes never crash the decoder") {
  std::mt19937_64 rng(7);
  Segment good(plan_of(kBuffers).total_bytes);
  write_sealed(good);
  std::vector<std::byte> bytes(good.bytes.size());
  int accepted = 0;
  for (int i = 0; i < 10000; ++i) {
    const size_t len = rng() % (bytes.size() + 1);
    for (size_t k = 0; k < len; ++k) bytes[k] = std::byte(static_cast<uint8_t>(rng()));
    // Keep the magic and format most of the time so the deeper checks run on garbage.
    if (i % 4 != 0 && len >= 16) std::memcpy(bytes.data(), good.bytes.data(), 12);
    if (i % 2 == 0 && len >= kHeaderBytes) std::memcpy(bytes.data() + 16, good.bytes.data() + 16, 96);
    // An exact-size copy, so that a sanitizer build catches any read past the span.
    const std::vector<std::byte> exact(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(len));
    if (decode_version(exact).ok()) ++accepted;
  }
  CHECK(accepted == 0);
}

TEST_CASE("layout causes have stable names") {
  CHECK(name(LayoutCause::unsealed) == "unsealed");
  CHECK(name(LayoutCause::data_checksum) == "data_checksum");
  CHECK(name(LayoutCause::meta_checksum) == "meta_checksum");
}

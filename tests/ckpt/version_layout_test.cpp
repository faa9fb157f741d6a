// The on-segment version format: round trips, canonical offsets, and every kind of damage refused with
// its cause, never a crash.
#include "ckpt_shm/version_layout.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <vector>

#include "ckpt_pattern.hpp"

using namespace shoal::ckpt;
using shoal::ckpt::test::fill_pattern;
using shoal::ckpt::test::has_pattern;

namespace {

const std::vector<BufferSpec> kBuffers = {{"model.weight", 1000}, {"optim.exp_avg", 0}, {"rng", 37}};

// A page-aligned buffer, as a segment is.
struct Segment {
  explicit Segment(size_t n) : storage((n + 2 * kDataAlignment) / 8) {
    auto* p = reinterpret_cast<std::byte*>(storage.data());
    const size_t skew = (kDataAlignment - reinterpret_cast<uintptr_t>(p) % kDataAlignment) % kDataAlignment;
    bytes = std::span<std::byte>(p + skew, n);
  }
  std::vector<uint64_t> storage;
  std::span<std::byte> bytes;
};

LayoutPlan plan_of(const std::vector<BufferSpec>& buffers) {
  auto plan = plan_layout(buffers);
  REQUIRE(plan.ok());
  return *plan;
}

// Writes and seals step 42 of rank 3 with the test pattern; returns the plan.
LayoutPlan write_sealed(Segment& seg, const std::vector<BufferSpec>& buffers = kBuffers) {
  const auto plan = plan_of(buffers);
  REQUIRE(begin_version(seg.bytes, VersionIdentity{"job-1", 3, 42, 7}, buffers, plan).ok());
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
  CHECK_FALSE(begin_version(seg.bytes.first(plan.total_bytes - 1), {"job-1", 0, 1, 1}, kBuffers, plan).ok());
  CHECK_FALSE(begin_version(seg.bytes, {"job/1", 0, 1, 1}, kBuffers, plan).ok());
}

TEST_CASE("a version that was begun but not sealed is refused as unsealed") {
  const auto plan = plan_of(kBuffers);
  Segment seg(plan.total_bytes);
  REQUIRE(begin_version(seg.bytes, {"job-1", 0, 5, 1}, kBuffers, plan).ok());
  CHECK(load_state(seg.bytes) == VersionState::writing);
  CHECK(cause_of(seg.bytes) == LayoutCause::unsealed);
  CHECK(cause_of(seg.bytes, DataCheck::skip) == LayoutCause::unsealed);
}

TEST_CASE("a sealed version rewritten by a new save is unsealed again until the new seal") {
  Segment seg(plan_of(kBuffers).total_bytes);
  write_sealed(seg);
  REQUIRE(begin_version(seg.bytes, {"job-1", 3, 43, 8}, kBuffers, plan_of(kBuffers)).ok());
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
  // The step (offset 120) claims another step than the one sealed.
  seg.bytes[120] ^= std::byte{0x01};
  CHECK(cause_of(seg.bytes) == LayoutCause::meta_checksum);
}

TEST_CASE("a future format version is refused as bad_format") {
  Segment seg(plan_of(kBuffers).total_bytes);
  write_sealed(seg);
  seg.bytes[8] = std::byte{2};
  CHECK(cause_of(seg.bytes) == LayoutCause::bad_format);
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

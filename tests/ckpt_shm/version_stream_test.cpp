// Streaming a sealed version to a peer: the sender's pieces, and a receiver fed in random splits
// that writes straight into its destination, verifies every buffer as it arrives, seals only a
// complete and intact version, and refuses damage with its cause.
#include "ckpt_shm/version_stream.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <random>
#include <vector>

#include "ckpt_pattern.hpp"

using namespace shoal::ckpt;
using shoal::ckpt::test::fill_pattern;

namespace {

constexpr size_t K = kChecksumChunkBytes;
// Sizes that are not multiples of a chunk, an empty buffer, and one larger than a receive slice.
const std::vector<BufferSpec> kBuffers = {
    {"weights", 3 * K + 17}, {"empty", 0}, {"bias", K}, {"optimizer", kReceiveSliceBytes + 1000}, {"rng", 5}};

// A page-aligned buffer, as a segment is.
struct Segment {
  explicit Segment(size_t n, std::byte fill = std::byte{0}) : storage((n + 2 * kDataAlignment) / 8) {
    auto* p = reinterpret_cast<std::byte*>(storage.data());
    const size_t skew = (kDataAlignment - reinterpret_cast<uintptr_t>(p) % kDataAlignment) % kDataAlignment;
    bytes = std::span<std::byte>(p + skew, n);
    std::memset(bytes.data(), std::to_integer<int>(fill), n);
  }
  std::vector<uint64_t> storage;
  std::span<std::byte> bytes;
};

struct Source {
  explicit Source(const std::vector<BufferSpec>& buffers = kBuffers, bool seal = true)
      : plan(*plan_layout(buffers)), seg(plan.total_bytes) {
    REQUIRE(begin_version(seg.bytes, VersionIdentity{"job-s", 2, 77, 9, 4}, buffers, plan).ok());
    for (size_t i = 0; i < buffers.size(); ++i)
      fill_pattern(seg.bytes.subspan(plan.offsets[i], buffers[i].bytes), 77, i);
    if (seal) REQUIRE(seal_version(seg.bytes).ok());
  }
  // The stream as a sender writes it.
  std::vector<std::byte> stream() const {
    auto info = decode_version(seg.bytes, DataCheck::skip);
    REQUIRE(info.ok());
    std::vector<std::byte> out;
    for (auto piece : stream_pieces(seg.bytes, *info)) out.insert(out.end(), piece.begin(), piece.end());
    CHECK(out.size() == stream_bytes(*info));
    return out;
  }
  LayoutPlan plan;
  Segment seg;
};

struct Outcome {
  std::optional<LayoutError> refused;
  bool attached = false;
  bool complete = false;
  uint64_t fed = 0;
};

// Feeds `stream` to `r` in random pieces of up to `scale` bytes (and never more than next() offers),
// attaching `dest` when asked.
Outcome feed(VersionReceiver& r, std::span<const std::byte> stream, std::span<std::byte> dest, uint64_t seed,
             size_t scale) {
  std::mt19937_64 rng(seed);
  Outcome out;
  size_t at = 0;
  while (at < stream.size()) {
    const auto into = r.next();
    REQUIRE_FALSE(into.empty());
    const size_t n = std::min({into.size(), stream.size() - at, size_t{1} + static_cast<size_t>(rng() % scale)});
    std::memcpy(into.data(), stream.data() + at, n);
    at += n;
    out.fed = at;
    auto p = r.advance(n);
    if (!p) {
      out.refused = p.error();
      return out;
    }
    if (*p == VersionReceiver::Progress::need_destination) {
      REQUIRE(r.attach(dest).ok());
      out.attached = true;
    }
    if (*p == VersionReceiver::Progress::complete || r.complete()) {
      out.complete = true;
      CHECK(at == stream.size());
      return out;
    }
  }
  return out;
}

}  // namespace

TEST_CASE("a version streamed in random splits arrives sealed, verified and byte-identical in its destination") {
  const Source src;
  const auto stream = src.stream();
  for (const size_t scale : {size_t{1000}, size_t{70000}, size_t{3} << 20}) {
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      CAPTURE(scale);
      CAPTURE(seed);
      // Garbage in the destination: the gaps are never sent, and every byte that counts is overwritten.
      Segment dest(src.plan.total_bytes + 100, std::byte{0xCD});
      VersionReceiver r;
      const auto out = feed(r, stream, dest.bytes, seed * 31 + scale, scale);
      REQUIRE_FALSE(out.refused.has_value());
      CHECK(out.attached);
      REQUIRE(out.complete);
      CHECK(r.received() == stream.size());
      CHECK(r.expected() == stream.size());
      CHECK(r.next().empty());
      CHECK(r.info().id.step == 77);
      CHECK(r.info().id.world == 4);
      CHECK(load_state(dest.bytes) == VersionState::sealed);
      auto v = decode_version(dest.bytes, DataCheck::verify);
      REQUIRE(v.ok());
      CHECK(v->id.job == "job-s");
      CHECK(v->id.sequence == 9);
      CHECK(std::memcmp(dest.bytes.data(), src.seg.bytes.data(), src.plan.data_offset) == 0);
      for (const auto& b : v->buffers) {
        CHECK(std::memcmp(dest.bytes.data() + b.offset, src.seg.bytes.data() + b.offset, b.size) == 0);
      }
    }
  }
}

TEST_CASE("next() never offers more than a receive slice, nor bytes past the buffer being received") {
  const Source src;
  const auto stream = src.stream();
  Segment dest(src.plan.total_bytes);
  VersionReceiver r;
  CHECK(r.next().size() == kHeaderBytes);
  CHECK(r.expected() == 0);
  size_t at = 0;
  while (!r.complete()) {
    const auto into = r.next();
    REQUIRE_FALSE(into.empty());
    CHECK(into.size() <= kReceiveSliceBytes);
    std::memcpy(into.data(), stream.data() + at, into.size());
    at += into.size();
    auto p = r.advance(into.size());
    REQUIRE(p.ok());
    if (*p == VersionReceiver::Progress::need_destination) {
      CHECK(at == src.plan.data_offset);
      CHECK(r.next().empty());
      REQUIRE(r.attach(dest.bytes).ok());
      CHECK_FALSE(r.attach(dest.bytes).ok());  // once only
    }
  }
  CHECK(at == stream.size());
  CHECK(decode_version(dest.bytes).ok());
}

TEST_CASE("one flipped data byte is refused as data_checksum naming the buffer, and the destination is never sealed") {
  const Source src;
  auto stream = src.stream();
  // The second byte of 'rng', the last buffer: everything before it verifies.
  stream[stream.size() - 4] ^= std::byte{0x20};
  Segment dest(src.plan.total_bytes);
  VersionReceiver r;
  const auto out = feed(r, stream, dest.bytes, 5, 100000);
  REQUIRE(out.refused.has_value());
  CHECK(out.refused->cause == LayoutCause::data_checksum);
  CHECK(out.refused->detail.find("'rng'") != std::string::npos);
  CHECK_FALSE(out.complete);
  CHECK(r.failed());
  CHECK(load_state(dest.bytes) == VersionState::writing);
  CHECK(decode_version(dest.bytes).error().cause == LayoutCause::unsealed);
  // A refusal is final.
  CHECK(r.next().empty());
  auto again = r.advance(0);
  REQUIRE_FALSE(again.ok());
  CHECK(again.error().cause == LayoutCause::data_checksum);
}

TEST_CASE("a damaged byte in an early buffer is refused as soon as that buffer ends") {
  const Source src;
  auto stream = src.stream();
  stream[src.plan.data_offset + 10] ^= std::byte{0x01};  // in 'weights'
  Segment dest(src.plan.total_bytes);
  VersionReceiver r;
  const auto out = feed(r, stream, dest.bytes, 6, 50000);
  REQUIRE(out.refused.has_value());
  CHECK(out.refused->cause == LayoutCause::data_checksum);
  CHECK(out.refused->detail.find("'weights'") != std::string::npos);
  CHECK(out.fed <= src.plan.data_offset + kBuffers[0].bytes + 50000);
}

TEST_CASE("a flipped prefix byte is refused as meta_checksum before any destination is attached") {
  const Source src;
  auto stream = src.stream();
  stream[kHeaderBytes + 5] ^= std::byte{0x01};  // a buffer name in the table
  Segment dest(src.plan.total_bytes, std::byte{0xCD});
  VersionReceiver r;
  const auto out = feed(r, stream, dest.bytes, 7, 300);
  REQUIRE(out.refused.has_value());
  CHECK(out.refused->cause == LayoutCause::meta_checksum);
  CHECK_FALSE(out.attached);
  CHECK(out.fed == src.plan.data_offset);
  CHECK(dest.bytes[0] == std::byte{0xCD});  // untouched
  CHECK_FALSE(r.attach(dest.bytes).ok());
}

TEST_CASE("a stream that is not a sealed version is refused from its header or prefix") {
  SUBCASE("foreign bytes") {
    std::vector<std::byte> junk(kHeaderBytes + 10, std::byte{'x'});
    VersionReceiver r;
    Segment dest(8192);
    const auto out = feed(r, junk, dest.bytes, 8, 64);
    REQUIRE(out.refused.has_value());
    CHECK(out.refused->cause == LayoutCause::bad_magic);
    CHECK(out.fed == kHeaderBytes);
  }
  SUBCASE("a version that was never sealed") {
    const Source unsealed(kBuffers, false);
    const auto info = decode_version(unsealed.seg.bytes, DataCheck::skip);
    REQUIRE_FALSE(info.ok());
    std::vector<std::byte> stream(unsealed.seg.bytes.begin(),
                                  unsealed.seg.bytes.begin() + static_cast<std::ptrdiff_t>(unsealed.plan.data_offset));
    VersionReceiver r;
    Segment dest(unsealed.plan.total_bytes);
    const auto out = feed(r, stream, dest.bytes, 9, 5000);
    REQUIRE(out.refused.has_value());
    CHECK(out.refused->cause == LayoutCause::unsealed);
  }
}

TEST_CASE("a header claiming a huge prefix is refused from its 256 bytes, before anything is allocated") {
  const Source src;
  auto stream = src.stream();
  const uint32_t huge_count = 1u << 24;
  std::memcpy(stream.data() + 116, &huge_count, sizeof huge_count);
  const uint64_t offset = uint64_t{1} << 40;
  std::memcpy(stream.data() + 136, &offset, sizeof offset);
  VersionReceiver r;
  Segment dest(src.plan.total_bytes);
  const auto out = feed(r, stream, dest.bytes, 10, 1000);
  REQUIRE(out.refused.has_value());
  CHECK(out.refused->cause == LayoutCause::malformed);
  CHECK(out.fed == kHeaderBytes);
  CHECK(r.next().empty());
}

TEST_CASE("a receiver bounded by the announced stream refuses a longer prefix or version before allocating it") {
  const Source src;
  const auto stream = src.stream();
  const uint64_t prefix = src.plan.offsets.front();  // the data starts after the prefix
  {
    // The stream's own length: received whole.
    VersionReceiver r(stream.size());
    Segment dest(src.plan.total_bytes);
    CHECK(feed(r, stream, dest.bytes, 11, 1000).complete);
  }
  {
    // Announced shorter than the prefix the header names: refused from the header alone.
    VersionReceiver r(prefix - 1);
    Segment dest(src.plan.total_bytes);
    const auto out = feed(r, stream, dest.bytes, 12, 1000);
    REQUIRE(out.refused.has_value());
    CHECK(out.refused->cause == LayoutCause::malformed);
    CHECK(out.fed == kHeaderBytes);
    CHECK_FALSE(out.attached);
  }
  {
    // Longer than the prefix, shorter than the version the prefix describes: refused before any destination.
    VersionReceiver r(stream.size() - 1);
    Segment dest(src.plan.total_bytes);
    const auto out = feed(r, stream, dest.bytes, 13, 1000);
    REQUIRE(out.refused.has_value());
    CHECK(out.refused->cause == LayoutCause::malformed);
    CHECK(out.fed <= prefix);
    CHECK_FALSE(out.attached);
  }
}

TEST_CASE("a truncated stream leaves the destination unsealed") {
  const Source src;
  const auto stream = src.stream();
  Segment dest(src.plan.total_bytes);
  VersionReceiver r;
  const auto cut = std::span<const std::byte>(stream).first(stream.size() - 3);
  const auto out = feed(r, cut, dest.bytes, 11, 1 << 20);
  CHECK_FALSE(out.refused.has_value());
  CHECK(out.attached);
  CHECK_FALSE(out.complete);
  CHECK(r.received() == stream.size() - 3);
  CHECK(r.next().size() == 3);
  CHECK(load_state(dest.bytes) == VersionState::writing);
  CHECK(decode_version(dest.bytes).error().cause == LayoutCause::unsealed);
}

TEST_CASE("a destination too small is refused and a large enough one can still be attached") {
  const Source src;
  const auto stream = src.stream();
  VersionReceiver r;
  Segment small(src.plan.total_bytes - 1);
  size_t at = 0;
  while (r.next().size() > 0) {
    const auto into = r.next();
    std::memcpy(into.data(), stream.data() + at, into.size());
    at += into.size();
    REQUIRE(r.advance(into.size()).ok());
  }
  CHECK_FALSE(r.attach(small.bytes).ok());
  CHECK(load_state(small.bytes) == VersionState::empty);
  Segment dest(src.plan.total_bytes);
  REQUIRE(r.attach(dest.bytes).ok());
  CHECK(load_state(dest.bytes) == VersionState::writing);
}

TEST_CASE("advancing past what next() offered is refused") {
  VersionReceiver r;
  auto p = r.advance(kHeaderBytes + 1);
  REQUIRE_FALSE(p.ok());
  CHECK(p.error().cause == LayoutCause::malformed);
  CHECK(r.failed());
}

TEST_CASE("a version whose buffers are all empty is complete and sealed when its destination is attached") {
  const std::vector<BufferSpec> empties = {{"a", 0}, {"b", 0}};
  const Source src(empties);
  const auto stream = src.stream();
  CHECK(stream.size() == src.plan.data_offset);
  Segment dest(src.plan.total_bytes);
  VersionReceiver r;
  const auto out = feed(r, stream, dest.bytes, 12, 4096);
  CHECK(out.attached);
  CHECK(out.complete);
  CHECK(r.complete());
  CHECK(r.next().empty());
  CHECK(r.advance(0).ok());
  CHECK(decode_version(dest.bytes).ok());
}

namespace {

// Feeds `stream` to a scattered receive: buffer 0 into its own memory first; then, once it arrived, every
// other buffer into memory of its own. Returns the buffers' memory (index = buffer).
struct Scattered {
  std::vector<std::vector<std::byte>> buffers;
  Outcome out;
  size_t asked = 0;  // how often the receiver asked for destinations
};

Scattered feed_scattered(VersionReceiver& r, std::span<const std::byte> stream, uint64_t seed, size_t scale) {
  std::mt19937_64 rng(seed);
  Scattered s;
  size_t at = 0;
  while (at < stream.size() || r.next().empty()) {
    if (r.complete()) break;
    const auto into = r.next();
    REQUIRE_FALSE(into.empty());
    const size_t n = std::min({into.size(), stream.size() - at, size_t{1} + static_cast<size_t>(rng() % scale)});
    std::memcpy(into.data(), stream.data() + at, n);
    at += n;
    s.out.fed = at;
    auto p = r.advance(n);
    if (!p) {
      s.out.refused = p.error();
      return s;
    }
    if (*p == VersionReceiver::Progress::need_destination) {
      ++s.asked;
      const auto& bufs = r.info().buffers;
      s.buffers.resize(bufs.size());
      const size_t first = r.buffers_attached();
      std::vector<std::span<std::byte>> dest;
      for (size_t i = first; i < (first == 0 ? 1 : bufs.size()); ++i) {
        s.buffers[i].assign(bufs[i].size, std::byte{0xEE});
        dest.emplace_back(s.buffers[i]);
      }
      REQUIRE(r.attach_buffers(first, std::move(dest)).ok());
      s.out.attached = true;
    }
    if (r.complete()) {
      s.out.complete = true;
      CHECK(at == stream.size());
      return s;
    }
  }
  return s;
}

}  // namespace

TEST_CASE("a scattered receive puts every buffer in its own memory, verified, the first before the others are placed") {
  const Source src;
  const auto stream = src.stream();
  for (const size_t scale : {size_t{1000}, size_t{3} << 20}) {
    CAPTURE(scale);
    VersionReceiver r;
    auto s = feed_scattered(r, stream, scale, scale);
    REQUIRE_FALSE(s.out.refused.has_value());
    REQUIRE(s.out.complete);
    CHECK(s.asked == 2);  // after the prefix, and after buffer 0 arrived
    for (size_t i = 0; i < kBuffers.size(); ++i) {
      CAPTURE(i);
      REQUIRE(s.buffers[i].size() == kBuffers[i].bytes);
      if (kBuffers[i].bytes == 0) continue;  // no memory to compare (and memcmp takes no null pointer)
      CHECK(std::memcmp(s.buffers[i].data(), src.seg.bytes.data() + src.plan.offsets[i], kBuffers[i].bytes) == 0);
    }
  }
}

TEST_CASE("a scattered receive refuses a damaged buffer, wrong sizes, and mixing with attach") {
  const Source src;
  auto stream = src.stream();
  // The last byte of the "optimizer" buffer (index 3) on the wire.
  size_t at = src.plan.data_offset;
  for (size_t i = 0; i < 3; ++i) at += kBuffers[i].bytes;
  stream[at + kBuffers[3].bytes - 1] ^= std::byte{0x01};
  VersionReceiver r;
  auto s = feed_scattered(r, stream, 7, 1 << 16);
  REQUIRE(s.out.refused.has_value());
  CHECK(s.out.refused->cause == LayoutCause::data_checksum);
  CHECK(s.out.refused->detail.find("optimizer") != std::string::npos);

  const auto good = src.stream();
  VersionReceiver w;
  size_t fed = 0;
  while (true) {  // up to the prefix
    auto into = w.next();
    const size_t n = std::min(into.size(), good.size() - fed);
    std::memcpy(into.data(), good.data() + fed, n);
    fed += n;
    auto p = w.advance(n);
    REQUIRE(p.ok());
    if (*p == VersionReceiver::Progress::need_destination) break;
  }
  std::vector<std::byte> small(kBuffers[0].bytes - 1);
  CHECK_FALSE(w.attach_buffers(0, {std::span<std::byte>(small)}).ok());  // one byte short
  std::vector<std::byte> right(kBuffers[0].bytes);
  CHECK_FALSE(w.attach_buffers(1, {std::span<std::byte>(right)}).ok());  // buffer 0 comes first
  REQUIRE(w.attach_buffers(0, {std::span<std::byte>(right)}).ok());
  Segment dest(src.plan.total_bytes);
  CHECK_FALSE(w.attach(dest.bytes).ok());  // scattered once, scattered to the end
}

// CRC32C: the published check value, the iSCSI test vectors, incremental use, the hardware path
// against the software one; the chunked buffer checksum against its definition, streamed in any
// split, and fused with a copy.
#include "ckpt_shm/checksum.hpp"

#include <doctest/doctest.h>

#include <array>
#include <cstring>
#include <random>
#include <string_view>
#include <vector>

using namespace shoal::ckpt;

namespace {

std::span<const std::byte> text(std::string_view s) { return std::as_bytes(std::span(s.data(), s.size())); }

template <class F>
std::array<std::byte, 32> bytes32(F f) {
  std::array<std::byte, 32> a{};
  for (size_t i = 0; i < a.size(); ++i) a[i] = std::byte(f(i));
  return a;
}

std::vector<std::byte> random_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> v(n);
  for (auto& b : v) b = std::byte(static_cast<uint8_t>(rng()));
  return v;
}

// The buffer checksum exactly as checksum.hpp defines it, with the software CRC only.
uint32_t reference_buffer_checksum(std::span<const std::byte> bytes) {
  uint32_t outer = 0;
  for (size_t at = 0; at < bytes.size(); at += kChecksumChunkBytes) {
    const uint32_t chunk = crc32c_software(bytes.subspan(at, std::min(kChecksumChunkBytes, bytes.size() - at)));
    const std::array<std::byte, 4> le = {std::byte(chunk & 0xFF), std::byte((chunk >> 8) & 0xFF),
                                         std::byte((chunk >> 16) & 0xFF), std::byte(chunk >> 24)};
    outer = crc32c_software(le, outer);
  }
  return outer;
}

constexpr size_t K = kChecksumChunkBytes;
// The sizes around every boundary the implementation has: 8-byte words, chunks, groups of three.
const std::vector<size_t> kSizes = {0,         1,         7,     8,         9,         K - 1, K,           K + 1,
                                    2 * K + 3, 3 * K - 1, 3 * K, 3 * K + 5, 4 * K + 1, 6 * K, 7 * K + 4095};

}  // namespace

TEST_CASE("crc32c matches the published check value and the iSCSI test vectors of RFC 3720") {
  for (auto f : {crc32c, crc32c_software}) {
    CHECK(f(text(""), kCrc32cInitial) == 0u);
    CHECK(f(text("123456789"), kCrc32cInitial) == 0xE3069283u);
    CHECK(f(bytes32([](size_t) { return 0x00; }), kCrc32cInitial) == 0x8A9136AAu);
    CHECK(f(bytes32([](size_t) { return 0xFF; }), kCrc32cInitial) == 0x62A8AB43u);
    CHECK(f(bytes32([](size_t i) { return i; }), kCrc32cInitial) == 0x46DD794Eu);
    CHECK(f(bytes32([](size_t i) { return 31 - i; }), kCrc32cInitial) == 0x113FDB5Cu);
  }
}

TEST_CASE("crc32c continued over two pieces equals crc32c over the whole, at every split and start offset") {
  std::vector<std::byte> data(300);
  for (size_t i = 0; i < data.size(); ++i) data[i] = std::byte(static_cast<uint8_t>(i * 37 + 11));
  for (size_t start = 0; start < 8; ++start) {
    const auto whole = std::span<const std::byte>(data).subspan(start);
    const uint32_t expected = crc32c(whole);
    for (size_t split = 0; split <= whole.size(); split += 7) {
      CHECK(crc32c(whole.subspan(split), crc32c(whole.first(split))) == expected);
    }
  }
}

TEST_CASE("crc32c changes when any single bit of the input flips") {
  std::vector<std::byte> data(64);
  for (size_t i = 0; i < data.size(); ++i) data[i] = std::byte(static_cast<uint8_t>(i));
  const uint32_t base = crc32c(data);
  int unchanged = 0;
  for (size_t bit = 0; bit < data.size() * 8; ++bit) {
    data[bit / 8] ^= std::byte(1u << (bit % 8));
    if (crc32c(data) == base) ++unchanged;
    data[bit / 8] ^= std::byte(1u << (bit % 8));
  }
  CHECK(unchanged == 0);
}

TEST_CASE("the hardware crc32c gives the software's value for random inputs of every length and alignment") {
  MESSAGE("crc32c instruction available: " << crc32c_hardware_available());
  const auto data = random_bytes(4096 + 64, 11);
  std::mt19937_64 rng(12);
  for (size_t start = 0; start < 16; ++start) {
    for (size_t len = 0; len <= 300; ++len) {
      const auto piece = std::span<const std::byte>(data).subspan(start, len);
      const auto seed = static_cast<uint32_t>(rng());
      REQUIRE(crc32c(piece, seed) == crc32c_software(piece, seed));
    }
  }
  for (int i = 0; i < 200; ++i) {
    const size_t start = rng() % 64;
    const auto piece = std::span<const std::byte>(data).subspan(start, rng() % (data.size() - start));
    REQUIRE(crc32c(piece) == crc32c_software(piece));
  }
}

TEST_CASE("the buffer checksum of an empty buffer is 0 and of one short chunk is crc32c of its crc32c") {
  CHECK(buffer_checksum({}) == 0u);
  const uint32_t chunk = crc32c(text("123456789"));
  const std::array<std::byte, 4> le = {std::byte(0x83), std::byte(0x92), std::byte(0x06), std::byte(0xE3)};
  REQUIRE(chunk == 0xE3069283u);
  CHECK(buffer_checksum(text("123456789")) == crc32c(le));
}

TEST_CASE("buffer_checksum follows its definition at chunk boundaries and from unaligned starts") {
  const auto data = random_bytes(8 * K, 21);
  for (size_t size : kSizes) {
    for (size_t start : {size_t{0}, size_t{1}, size_t{3}, size_t{8}}) {
      if (start + size > data.size()) continue;
      const auto piece = std::span<const std::byte>(data).subspan(start, size);
      CAPTURE(size);
      CAPTURE(start);
      CHECK(buffer_checksum(piece) == reference_buffer_checksum(piece));
    }
  }
}

TEST_CASE("BufferChecksum over any split of a buffer equals buffer_checksum") {
  const auto data = random_bytes(8 * K, 31);
  std::mt19937_64 rng(32);
  for (size_t size : kSizes) {
    const auto whole = std::span<const std::byte>(data).first(size);
    const uint32_t expected = buffer_checksum(whole);
    for (int round = 0; round < 6; ++round) {
      BufferChecksum sum;
      size_t at = 0;
      // Small pieces, pieces around a chunk, and pieces of several chunks, mixed.
      const size_t scale = round % 3 == 0 ? 100 : round % 3 == 1 ? K + 7 : 4 * K;
      while (at < size) {
        const size_t n = std::min(size - at, static_cast<size_t>(rng() % (scale + 1)));
        sum.update(whole.subspan(at, n));
        at += n;
      }
      CAPTURE(size);
      CHECK(sum.bytes() == size);
      CHECK(sum.finish() == expected);
    }
  }
}

TEST_CASE("copy_with_checksum copies exactly and returns buffer_checksum of the source, also unaligned") {
  const auto data = random_bytes(8 * K + 16, 41);
  for (size_t size : kSizes) {
    for (auto [src_skew, dst_skew] : {std::pair<size_t, size_t>{0, 0}, {1, 0}, {0, 3}, {5, 7}}) {
      const auto src = std::span<const std::byte>(data).subspan(src_skew, size);
      std::vector<std::byte> out(size + 16, std::byte{0xAA});
      const auto dst = std::span<std::byte>(out).subspan(dst_skew, size);
      CAPTURE(size);
      CAPTURE(src_skew);
      CAPTURE(dst_skew);
      CHECK(copy_with_checksum(dst, src) == reference_buffer_checksum(src));
      CHECK(std::memcmp(dst.data(), src.data(), size) == 0);
      // Nothing written outside dst.
      for (size_t i = 0; i < dst_skew; ++i) CHECK(out[i] == std::byte{0xAA});
      for (size_t i = dst_skew + size; i < out.size(); ++i) CHECK(out[i] == std::byte{0xAA});
    }
  }
}

TEST_CASE("copy_with_checksum of a buffer large enough for non-temporal stores is still exact") {
  // 8 MiB and up bypass the cache; an odd size exercises the leftover chunks and the tail.
  // A destination aligned as checkpoint buffers are (pages, so every line whole) and one that is not.
  const size_t size = (size_t{9} << 20) + 2 * K + 12345;
  const auto data = random_bytes(size + 8, 51);
  for (size_t dst_skew : {size_t{0}, size_t{4}}) {
    std::vector<std::byte> out(size + 64);
    const size_t aligned = (32 - reinterpret_cast<uintptr_t>(out.data()) % 32) % 32;
    const auto src = std::span<const std::byte>(data).subspan(1, size);
    const auto dst = std::span<std::byte>(out).subspan(aligned + dst_skew, size);
    CHECK(copy_with_checksum(dst, src) == buffer_checksum(src));
    CHECK(std::memcmp(dst.data(), src.data(), size) == 0);
  }
}

TEST_CASE("large buffers split over two threads give the same checksum as their definition") {
  // Past kParallelChecksumBytes, with chunks left over after the three-way loop and a partial last
  // chunk, so both halves and the tail meet at odd places.
  const size_t size = kParallelChecksumBytes + 4 * K + 12345;
  const auto data = random_bytes(size + 64, 71);
  const auto src = std::span<const std::byte>(data).subspan(3, size);
  const uint32_t expected = reference_buffer_checksum(src);
  CHECK(buffer_checksum(src) == expected);
  // In pieces below the threshold, the one-thread path.
  BufferChecksum pieces;
  for (size_t at = 0; at < size; at += 5 * K + 1) pieces.update(src.subspan(at, std::min(5 * K + 1, size - at)));
  CHECK(pieces.finish() == expected);
  // Copies into a destination on a cache line (non-temporal stores) and one inside a line (cached).
  std::vector<std::byte> out(size + 128);
  const size_t aligned = (64 - reinterpret_cast<uintptr_t>(out.data()) % 64) % 64;
  for (size_t skew : {size_t{0}, size_t{8}}) {
    CAPTURE(skew);
    const auto dst = std::span<std::byte>(out).subspan(aligned + skew, size);
    CHECK(copy_with_checksum(dst, src) == expected);
    CHECK(std::memcmp(dst.data(), src.data(), size) == 0);
  }
}

TEST_CASE("copy_and_verify copies and says whether the source matches the expected checksum") {
  auto data = random_bytes(3 * K + 17, 81);
  const uint32_t sum = buffer_checksum(data);
  std::vector<std::byte> out(data.size());
  CHECK(copy_and_verify(out, data, sum));
  CHECK(out == data);
  data[K + 5] ^= std::byte{0x01};
  CHECK_FALSE(copy_and_verify(out, data, sum));
  CHECK(copy_and_verify(std::span<std::byte>{}, std::span<const std::byte>{}, 0));
}

TEST_CASE("a single flipped bit anywhere changes the buffer checksum") {
  auto data = random_bytes(3 * K + 100, 61);
  const uint32_t base = buffer_checksum(data);
  std::mt19937_64 rng(62);
  int unchanged = 0;
  for (int i = 0; i < 500; ++i) {
    const size_t bit = rng() % (data.size() * 8);
    data[bit / 8] ^= std::byte(1u << (bit % 8));
    if (buffer_checksum(data) == base) ++unchanged;
    data[bit / 8] ^= std::byte(1u << (bit % 8));
  }
  CHECK(unchanged == 0);
}

// CRC32C: the published check value, the iSCSI test vectors, and incremental use.
#include "ckpt_shm/checksum.hpp"

#include <doctest/doctest.h>

#include <array>
#include <string_view>
#include <vector>

using shoal::ckpt::crc32c;

namespace {

std::span<const std::byte> text(std::string_view s) { return std::as_bytes(std::span(s.data(), s.size())); }

template <class F>
std::array<std::byte, 32> bytes32(F f) {
  std::array<std::byte, 32> a{};
  for (size_t i = 0; i < a.size(); ++i) a[i] = std::byte(f(i));
  return a;
}

}  // namespace

TEST_CASE("crc32c matches the published check value and the iSCSI test vectors of RFC 3720") {
  CHECK(crc32c(text("")) == 0u);
  CHECK(crc32c(text("123456789")) == 0xE3069283u);
  CHECK(crc32c(bytes32([](size_t) { return 0x00; })) == 0x8A9136AAu);
  CHECK(crc32c(bytes32([](size_t) { return 0xFF; })) == 0x62A8AB43u);
  CHECK(crc32c(bytes32([](size_t i) { return i; })) == 0x46DD794Eu);
  CHECK(crc32c(bytes32([](size_t i) { return 31 - i; })) == 0x113FDB5Cu);
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

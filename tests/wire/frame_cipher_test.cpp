// Sealed frames: the layout, round trips with both ciphers, and every kind of interference refused: a
// changed bit anywhere, a frame replayed, dropped, reordered, cut short, or sealed under another key.
#include "wire/frame_cipher.hpp"

#include <doctest/doctest.h>

#include <array>
#include <cstring>
#include <string_view>
#include <vector>

using namespace shoal::wire;

namespace {

std::array<unsigned char, kStreamKeyBytes> key_of(unsigned char fill) {
  std::array<unsigned char, kStreamKeyBytes> k{};
  k.fill(fill);
  return k;
}

std::vector<std::byte> bytes_of(std::string_view s) {
  std::vector<std::byte> out(s.size());
  if (!s.empty()) std::memcpy(out.data(), s.data(), s.size());
  return out;
}

// The ciphers this host can run.
std::vector<StreamCipher> ciphers() {
  std::vector<StreamCipher> out = {StreamCipher::xchacha20poly1305};
  if ((local_cipher_offer() & static_cast<uint8_t>(StreamCipher::aes256gcm)) != 0)
    out.push_back(StreamCipher::aes256gcm);
  return out;
}

// A sealed frame as FrameReader hands it over.
Frame as_read(const std::vector<std::byte>& wire) {
  FrameReader reader(1 << 20);
  REQUIRE(reader.feed(wire).ok());
  auto f = reader.next();
  REQUIRE(f.has_value());
  REQUIRE(reader.pending_bytes() == 0);
  return *f;
}

}  // namespace

TEST_CASE("a sealed frame keeps the frame layout: length, type, ciphertext as long as the payload, tag") {
  for (const StreamCipher c : ciphers()) {
    CAPTURE(cipher_name(c));
    FrameCipher sender(c, key_of(3));
    std::vector<std::byte> wire;
    sender.append(wire, type_byte(FrameType::response), bytes_of("twelve bytes"));
    REQUIRE(wire.size() == kFrameHeaderBytes + 12 + kFrameTagBytes);
    CHECK(wire[0] == std::byte{0});
    CHECK(wire[3] == std::byte{1 + 12 + 16});
    CHECK(wire[4] == std::byte{type_byte(FrameType::response)});
    CHECK(std::memcmp(wire.data() + kFrameHeaderBytes, "twelve bytes", 12) != 0);  // encrypted
    FrameCipher receiver(c, key_of(3));
    Frame f = as_read(wire);
    REQUIRE(receiver.open(f).ok());
    CHECK(f.payload == bytes_of("twelve bytes"));
    CHECK(receiver.frames() == 1);
    CHECK(sender.frames() == 1);
  }
}

TEST_CASE("frames open in order, empty ones too, and big ones in place") {
  for (const StreamCipher c : ciphers()) {
    CAPTURE(cipher_name(c));
    FrameCipher sender(c, key_of(4)), receiver(c, key_of(4));
    std::vector<std::byte> big(1 << 20);
    for (size_t i = 0; i < big.size(); ++i) big[i] = std::byte((i * 131) >> 3);
    for (const auto& payload : {bytes_of(""), bytes_of("x"), big}) {
      std::vector<std::byte> wire;
      sender.append(wire, type_byte(FrameType::data), payload);
      // Opened where it lies: header, body and tag as a reader finds them on the stream.
      auto header = std::span<const std::byte, kFrameHeaderBytes>(wire.data(), kFrameHeaderBytes);
      auto body = std::span<std::byte>(wire).subspan(kFrameHeaderBytes, payload.size());
      auto tag =
          std::span<const std::byte, kFrameTagBytes>(wire.data() + kFrameHeaderBytes + payload.size(), kFrameTagBytes);
      REQUIRE(receiver.open(header, body, tag).ok());
      CHECK(std::equal(body.begin(), body.end(), payload.begin(), payload.end()));
    }
  }
}

TEST_CASE("every changed bit of a sealed frame, header included, fails it as bad_auth or malformed") {
  for (const StreamCipher c : ciphers()) {
    CAPTURE(cipher_name(c));
    FrameCipher sender(c, key_of(5));
    std::vector<std::byte> wire;
    sender.append(wire, type_byte(FrameType::request), bytes_of("abc"));
    for (size_t pos = 0; pos < wire.size(); ++pos) {
      for (int bit = 0; bit < 8; ++bit) {
        CAPTURE(pos);
        CAPTURE(bit);
        auto changed = wire;
        changed[pos] ^= std::byte(1u << bit);
        FrameCipher receiver(c, key_of(5));
        auto header = std::span<const std::byte, kFrameHeaderBytes>(changed.data(), kFrameHeaderBytes);
        auto body = std::span<std::byte>(changed).subspan(kFrameHeaderBytes, 3);
        auto tag = std::span<const std::byte, kFrameTagBytes>(changed.data() + kFrameHeaderBytes + 3, kFrameTagBytes);
        auto r = receiver.open(header, body, tag);
        REQUIRE_FALSE(r.ok());
        // A changed length no longer matches the body: malformed; anything else fails the tag.
        CHECK(r.error().cause == (pos < 4 ? RejectCause::malformed : RejectCause::bad_auth));
        CHECK(receiver.frames() == 0);
      }
    }
  }
}

TEST_CASE("a frame replayed, dropped, reordered or from another key or direction is refused") {
  for (const StreamCipher c : ciphers()) {
    CAPTURE(cipher_name(c));
    FrameCipher sender(c, key_of(6));
    std::vector<std::byte> first, second, third;
    sender.append(first, type_byte(FrameType::request), bytes_of("one"));
    sender.append(second, type_byte(FrameType::request), bytes_of("two"));
    sender.append(third, type_byte(FrameType::request), bytes_of("three"));
    {
      FrameCipher receiver(c, key_of(6));
      Frame f = as_read(first);
      REQUIRE(receiver.open(f).ok());
      Frame again = as_read(first);
      CHECK(receiver.open(again).error().cause == RejectCause::bad_auth);  // replayed
    }
    {
      FrameCipher receiver(c, key_of(6));
      Frame f = as_read(second);
      CHECK_FALSE(receiver.open(f).ok());  // reordered: the second before the first
    }
    {
      FrameCipher receiver(c, key_of(6));
      Frame f = as_read(first);
      REQUIRE(receiver.open(f).ok());
      Frame skip = as_read(third);
      CHECK_FALSE(receiver.open(skip).ok());  // the second was dropped
    }
    {
      FrameCipher other(c, key_of(7));
      Frame f = as_read(first);
      CHECK_FALSE(other.open(f).ok());  // another connection's or direction's key
    }
  }
}

TEST_CASE("a frame shorter than its tag is refused as truncated, and a length that disagrees as malformed") {
  FrameCipher receiver(StreamCipher::xchacha20poly1305, key_of(8));
  Frame tiny{type_byte(FrameType::request), std::vector<std::byte>(kFrameTagBytes - 1)};
  CHECK(receiver.open(tiny).error().cause == RejectCause::truncated);
  FrameCipher sender(StreamCipher::xchacha20poly1305, key_of(8));
  std::vector<std::byte> wire;
  sender.append(wire, type_byte(FrameType::data), bytes_of("abcdef"));
  auto header = std::span<const std::byte, kFrameHeaderBytes>(wire.data(), kFrameHeaderBytes);
  auto body = std::span<std::byte>(wire).subspan(kFrameHeaderBytes, 5);  // one byte short
  auto tag = std::span<const std::byte, kFrameTagBytes>(wire.data() + kFrameHeaderBytes + 6, kFrameTagBytes);
  CHECK(receiver.open(header, body, tag).error().cause == RejectCause::malformed);
}

TEST_CASE("the two ciphers are not interchangeable under one key") {
  if (ciphers().size() < 2) return;  // no AES here
  FrameCipher aes(StreamCipher::aes256gcm, key_of(9));
  FrameCipher chacha(StreamCipher::xchacha20poly1305, key_of(9));
  std::vector<std::byte> wire;
  aes.append(wire, type_byte(FrameType::request), bytes_of("payload"));
  Frame f = as_read(wire);
  CHECK_FALSE(chacha.open(f).ok());
}

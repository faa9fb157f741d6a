// BlockingConn once keyed: frames sealed both ways (nothing of the plaintext on the wire), bulk data
// opened in place where it lands or handed out in parts, and a changed, cut, mistyped or oversized data
// record refused before its bytes count.
#include <doctest/doctest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string_view>
#include <thread>
#include <vector>

#include "../support/tcp_pair.hpp"
#include "net/blocking_conn.hpp"
#include "wire/frame_cipher.hpp"

using namespace std::chrono_literals;
using shoal::net::BlockingConn;
using namespace shoal::wire;
using Clock = std::chrono::steady_clock;

namespace {

StreamKeys keys(bool client, StreamCipher cipher = StreamCipher::xchacha20poly1305) {
  StreamKeys k;
  k.cipher = cipher;
  k.send.fill(client ? 0x11 : 0x22);
  k.receive.fill(client ? 0x22 : 0x11);
  return k;
}

std::vector<StreamCipher> ciphers() {
  std::vector<StreamCipher> out = {StreamCipher::xchacha20poly1305};
  if ((local_cipher_offer() & static_cast<uint8_t>(StreamCipher::aes256gcm)) != 0)
    out.push_back(StreamCipher::aes256gcm);
  return out;
}

std::vector<std::byte> pattern(size_t n, uint8_t seed) {
  std::vector<std::byte> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = std::byte(static_cast<uint8_t>((i * 131 + seed) >> 2));
  return p;
}

std::vector<std::byte> bytes_of(std::string_view s) {
  std::vector<std::byte> out(s.size());
  std::memcpy(out.data(), s.data(), s.size());
  return out;
}

struct Keyed {
  shoal::test::LoopbackTcpPair pair;
  BlockingConn client, server;
  explicit Keyed(StreamCipher cipher = StreamCipher::xchacha20poly1305) {
    client = BlockingConn(pair.release_client());
    server = BlockingConn(pair.release_server());
    client.set_keys(keys(true, cipher));
    server.set_keys(keys(false, cipher));
  }
};

Clock::time_point soon() { return Clock::now() + 5s; }

}  // namespace

TEST_CASE("frames of a keyed connection are sealed both ways and nothing of the plaintext is on the wire") {
  for (const StreamCipher c : ciphers()) {
    CAPTURE(cipher_name(c));
    Keyed k(c);
    CHECK(k.client.sealed());
    CHECK(k.client.cipher() == c);
    REQUIRE(k.client.write_frame(type_byte(FrameType::request), bytes_of("a secret request"), soon()));
    auto got = k.server.read_frame(64, soon());
    REQUIRE(got.ok());
    CHECK(got->type == type_byte(FrameType::request));
    CHECK(got->payload == bytes_of("a secret request"));
    REQUIRE(k.server.write_frame(type_byte(FrameType::response), bytes_of("its answer"), soon()));
    auto back = k.client.read_frame(64, soon());
    REQUIRE(back.ok());
    CHECK(back->payload == bytes_of("its answer"));
  }
  // What a reader without the keys sees: a frame of the same type, 16 bytes longer, not the plaintext.
  shoal::test::LoopbackTcpPair pair;
  BlockingConn sender(pair.release_client()), eavesdropper(pair.release_server());
  sender.set_keys(keys(true));
  REQUIRE(sender.write_frame(type_byte(FrameType::request), bytes_of("a secret request"), soon()));
  auto raw = eavesdropper.read_frame(64, soon());
  REQUIRE(raw.ok());
  CHECK(raw->payload.size() == 16 + kFrameTagBytes);
  CHECK(std::string_view(reinterpret_cast<const char*>(raw->payload.data()), 16) != "a secret request");
}

TEST_CASE("the limit of a sealed frame is its plaintext's, and a frame that does not open fails the read") {
  Keyed k;
  REQUIRE(k.client.write_frame(type_byte(FrameType::request), pattern(64, 1), soon()));
  CHECK(k.server.read_frame(64, soon()).ok());  // 64 bytes of plaintext under a limit of 64
  REQUIRE(k.client.write_frame(type_byte(FrameType::request), pattern(65, 1), soon()));
  auto over = k.server.read_frame(64, soon());
  REQUIRE_FALSE(over.ok());
  CHECK(over.error().message.find("above the limit") != std::string::npos);

  // Sealed under other keys: refused.
  shoal::test::LoopbackTcpPair pair;
  BlockingConn a(pair.release_client()), b(pair.release_server());
  a.set_keys(keys(true));
  b.set_keys(keys(true));  // the same direction's key: a reflected frame
  REQUIRE(a.write_frame(type_byte(FrameType::request), bytes_of("x"), soon()));
  auto reflected = b.read_frame(64, soon());
  REQUIRE_FALSE(reflected.ok());
  CHECK(reflected.error().message.find("does not verify") != std::string::npos);
}

TEST_CASE("bulk data arrives whole whatever the room each read gives, in place or in parts") {
  for (const StreamCipher c : ciphers()) {
    CAPTURE(cipher_name(c));
    Keyed k(c);
    // 9 MiB + 3: two full records, then a short one; then a frame after the data.
    const auto data = pattern((9u << 20) + 3, 7);
    std::thread writer([&] {
      CHECK(k.client.write_data(data, soon()));
      CHECK(k.client.write_frame(type_byte(FrameType::response), bytes_of("done"), soon()));
    });
    std::vector<std::byte> got(data.size());
    size_t filled = 0;
    // Rooms: a whole record (opened in place), less than a record (handed out in parts), odd sizes.
    const size_t rooms[] = {shoal::net::kMaxDataRecordBytes, 1000, 4u << 20, 3, 777777};
    for (size_t turn = 0; filled < data.size(); ++turn) {
      const size_t room = std::min(rooms[turn % std::size(rooms)], data.size() - filled);
      auto n = k.server.read_data(std::span<std::byte>(got).subspan(filled, room), soon());
      REQUIRE_MESSAGE(n.ok(), n.error().message);
      REQUIRE(*n >= 1);
      REQUIRE(*n <= room);
      filled += *n;
    }
    writer.join();
    CHECK(got == data);
    auto after = k.server.read_frame(64, soon());
    REQUIRE(after.ok());
    CHECK(after->payload == bytes_of("done"));
  }
}

TEST_CASE("a data record that is changed, cut short, mistyped or announced too large is refused") {
  const auto send_raw = [](int fd, const std::vector<std::byte>& bytes, bool end) {
    REQUIRE(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size()));
    if (end) ::shutdown(fd, SHUT_WR);
  };
  const auto data = pattern(5000, 3);
  const auto sealed_record = [&](uint8_t type) {
    FrameCipher sender(StreamCipher::xchacha20poly1305, keys(true).send);
    std::vector<std::byte> wire;
    sender.append(wire, type, data);
    return wire;
  };
  std::vector<std::byte> room(8000);
  SUBCASE("changed") {
    shoal::test::LoopbackTcpPair pair;
    BlockingConn reader(pair.release_server());
    reader.set_keys(keys(false));
    auto wire = sealed_record(type_byte(FrameType::data));
    wire[100] ^= std::byte{4};
    send_raw(pair.client, wire, true);
    auto r = reader.read_data(room, soon());
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("does not verify") != std::string::npos);
  }
  SUBCASE("cut short") {
    shoal::test::LoopbackTcpPair pair;
    BlockingConn reader(pair.release_server());
    reader.set_keys(keys(false));
    auto wire = sealed_record(type_byte(FrameType::data));
    wire.resize(wire.size() - 1);  // the tag's last byte never comes
    send_raw(pair.client, wire, true);
    CHECK_FALSE(reader.read_data(room, soon()).ok());
  }
  SUBCASE("another frame type where data was expected") {
    shoal::test::LoopbackTcpPair pair;
    BlockingConn reader(pair.release_server());
    reader.set_keys(keys(false));
    send_raw(pair.client, sealed_record(type_byte(FrameType::response)), true);
    auto r = reader.read_data(room, soon());
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("where checkpoint data was expected") != std::string::npos);
  }
  SUBCASE("announced larger than a record may be, or empty") {
    for (const uint32_t len : {uint32_t(1 + shoal::net::kMaxDataRecordBytes + 1 + 16), uint32_t(1 + 16)}) {
      shoal::test::LoopbackTcpPair pair;
      BlockingConn reader(pair.release_server());
      reader.set_keys(keys(false));
      const std::vector<std::byte> header = {std::byte(len >> 24), std::byte(len >> 16), std::byte(len >> 8),
                                             std::byte(len), std::byte{type_byte(FrameType::data)}};
      send_raw(pair.client, header, false);  // the connection stays open: refused on the header alone
      auto r = reader.read_data(room, soon());
      REQUIRE_FALSE(r.ok());
      CHECK(r.error().message.find("a data record of") != std::string::npos);
    }
  }
  SUBCASE("two records in the wrong order") {
    shoal::test::LoopbackTcpPair pair;
    BlockingConn reader(pair.release_server());
    reader.set_keys(keys(false));
    FrameCipher sender(StreamCipher::xchacha20poly1305, keys(true).send);
    std::vector<std::byte> first, second;
    sender.append(first, type_byte(FrameType::data), data);
    sender.append(second, type_byte(FrameType::data), data);
    second.insert(second.end(), first.begin(), first.end());
    send_raw(pair.client, second, true);
    CHECK_FALSE(reader.read_data(room, soon()).ok());
  }
}

TEST_CASE("an open connection moves data as raw bytes, exactly as before keys existed") {
  shoal::test::LoopbackTcpPair pair;
  BlockingConn writer(pair.release_client()), reader(pair.release_server());
  CHECK_FALSE(writer.sealed());
  CHECK_FALSE(writer.cipher().has_value());
  const auto data = pattern(3000, 9);
  REQUIRE(writer.write_data(data, soon()));
  std::vector<std::byte> got(data.size());
  REQUIRE(reader.read_exact(got, soon()));  // no framing at all
  CHECK(got == data);
}

// The UDP packet codec: round trips, and every kind of bad input refused with its cause.
#include <doctest/doctest.h>

#include <random>

#include "wire/packet.hpp"

using namespace shoal::wire;

namespace {

Envelope sample() {
  Envelope env = make_envelope("job-7", "host-a", 42, "10.0.0.1:7946");
  env.mutable_hello()->set_channel(Hello::PUSH_PULL);
  return env;
}

std::vector<std::byte> encoded(const Envelope& env) {
  auto r = encode_packet(env);
  REQUIRE(r.ok());
  return *r;
}

}  // namespace

TEST_CASE("an envelope survives encode and decode unchanged") {
  const Envelope env = sample();
  auto decoded = decode_packet(encoded(env), PacketLimits{kMaxPacketBytes, "job-7"});
  REQUIRE(decoded.ok());
  CHECK(decoded->cluster_id() == "job-7");
  CHECK(decoded->protocol_version() == kProtocolVersion);
  CHECK(decoded->sender().name() == "host-a");
  CHECK(decoded->sender().generation() == 42);
  CHECK(decoded->sender_addr() == "10.0.0.1:7946");
  REQUIRE(decoded->has_hello());
  CHECK(decoded->hello().channel() == Hello::PUSH_PULL);
}

TEST_CASE("a gossip body round-trips as opaque bytes") {
  Envelope env = make_envelope("c", "n", 1, "a");
  env.set_gossip(std::string("\x00\x01\x02\xff", 4));
  auto decoded = decode_packet(encoded(env), PacketLimits{});
  REQUIRE(decoded.ok());
  CHECK(decoded->gossip() == std::string("\x00\x01\x02\xff", 4));
}

TEST_CASE("every truncation of a valid packet is refused") {
  const auto bytes = encoded(sample());
  for (size_t len = 0; len < bytes.size(); ++len) {
    auto r = decode_packet(std::span(bytes.data(), len), PacketLimits{});
    CHECK_FALSE(r.ok());
    if (len >= kPacketHeaderBytes) CHECK(r.error().cause == RejectCause::truncated);
  }
}

TEST_CASE("bytes that are not a shoal packet are refused as bad magic") {
  const std::string text = "GET / HTTP/1.1\r\n\r\n";
  auto r = decode_packet(std::as_bytes(std::span(text)), PacketLimits{});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().cause == RejectCause::bad_magic);
}

TEST_CASE("a packet of another cluster is refused as wrong_cluster") {
  auto r = decode_packet(encoded(sample()), PacketLimits{kMaxPacketBytes, "job-8"});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().cause == RejectCause::wrong_cluster);
  CHECK(r.error().detail.find("job-7") != std::string::npos);
}

TEST_CASE("an unknown protocol version is refused as bad_version") {
  Envelope env = sample();
  env.set_protocol_version(kProtocolVersion + 1);
  auto r = decode_packet(encoded(env), PacketLimits{});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().cause == RejectCause::bad_version);
}

TEST_CASE("an envelope without sender or body is malformed") {
  Envelope no_sender = sample();
  no_sender.clear_sender();
  auto r1 = decode_packet(encoded(no_sender), PacketLimits{});
  REQUIRE_FALSE(r1.ok());
  CHECK(r1.error().cause == RejectCause::malformed);

  Envelope no_body = make_envelope("c", "n", 1, "a");
  auto r2 = decode_packet(encoded(no_body), PacketLimits{});
  REQUIRE_FALSE(r2.ok());
  CHECK(r2.error().cause == RejectCause::malformed);
}

TEST_CASE("trailing bytes after the payload are malformed") {
  auto bytes = encoded(sample());
  bytes.push_back(std::byte{0});
  auto r = decode_packet(bytes, PacketLimits{});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().cause == RejectCause::malformed);
}

TEST_CASE("datagrams above the limit are refused before parsing, and encode refuses to build them") {
  std::vector<std::byte> big(kMaxPacketBytes + 1, std::byte{'S'});
  auto r = decode_packet(big, PacketLimits{});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().cause == RejectCause::oversized);

  Envelope env = make_envelope("c", "n", 1, "a");
  env.set_gossip(std::string(kMaxPacketBytes, 'x'));
  CHECK_FALSE(encode_packet(env).ok());
}

TEST_CASE("random garbage behind a valid header never crashes the decoder and is never accepted silently") {
  std::mt19937_64 rng(20261122);
  const auto good = encoded(sample());
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::vector<std::byte> bytes = good;
    // Flip between 1 and 8 random bytes of the payload, or fill it with noise.
    if (i % 4 == 0) {
      for (size_t k = kPacketHeaderBytes; k < bytes.size(); ++k) bytes[k] = std::byte(rng());
    } else {
      const int flips = 1 + int(rng() % 8);
      for (int f = 0; f < flips; ++f)
        bytes[kPacketHeaderBytes + rng() % (bytes.size() - kPacketHeaderBytes)] = std::byte(rng());
    }
    auto r = decode_packet(bytes, PacketLimits{kMaxPacketBytes, "job-7"});
    if (r.ok()) {
      ++accepted;
      // Whatever got through is still a complete, well-formed envelope of our cluster.
      CHECK(r->cluster_id() == "job-7");
      CHECK(!r->sender().name().empty());
      CHECK(r->body_case() != Envelope::BODY_NOT_SET);
    }
  }
  CHECK(accepted < 20000);
}

TEST_CASE("reject counters count by cause") {
  RejectCounters c;
  c.add(RejectCause::malformed);
  c.add(RejectCause::malformed);
  c.add(RejectCause::wrong_cluster);
  CHECK(c.get(RejectCause::malformed) == 2);
  CHECK(c.get(RejectCause::wrong_cluster) == 1);
  CHECK(c.get(RejectCause::truncated) == 0);
  CHECK(c.total() == 3);
  CHECK(name(RejectCause::wrong_cluster) == "wrong_cluster");
}

// The typed hello that opens each TCP connection, and the warning rate limiter.
#include "net/stream_hello.hpp"

#include <doctest/doctest.h>

#include "base/warn_limiter.hpp"
#include "wire/packet.hpp"

using namespace shoal;

TEST_CASE("a hello decodes to its channel and sender") {
  const auto bytes =
      shoal::net::encode_hello(wire::make_envelope("c1", "node", 5, "10.0.0.1:7946"), wire::Hello::PROBE);
  REQUIRE_FALSE(bytes.empty());
  auto hello = shoal::net::decode_hello(bytes, "c1");
  REQUIRE(hello.ok());
  CHECK(hello->channel == wire::Hello::PROBE);
  CHECK(hello->name == "node");
  CHECK(hello->generation == 5u);
  CHECK(hello->addr == "10.0.0.1:7946");
}

TEST_CASE("a hello of another cluster, without a channel, or not a hello at all is refused by cause") {
  const auto sender = wire::make_envelope("c1", "node", 5, "10.0.0.1:7946");
  auto other = shoal::net::decode_hello(shoal::net::encode_hello(sender, wire::Hello::PUSH_PULL), "c2");
  REQUIRE_FALSE(other.ok());
  CHECK(other.error().cause == wire::RejectCause::wrong_cluster);

  auto unspecified = shoal::net::decode_hello(shoal::net::encode_hello(sender, wire::Hello::CHANNEL_UNSPECIFIED), "c1");
  REQUIRE_FALSE(unspecified.ok());
  CHECK(unspecified.error().cause == wire::RejectCause::malformed);

  auto gossip = sender;
  gossip.set_gossip("x");
  auto packet = wire::encode_packet(gossip);
  REQUIRE(packet.ok());
  auto not_hello = shoal::net::decode_hello(*packet, "c1");
  REQUIRE_FALSE(not_hello.ok());
  CHECK(not_hello.error().cause == wire::RejectCause::malformed);

  const std::vector<std::byte> noise(40, std::byte{0x5a});
  auto junk = shoal::net::decode_hello(noise, "c1");
  REQUIRE_FALSE(junk.ok());
  CHECK(junk.error().cause == wire::RejectCause::bad_magic);
}

TEST_CASE("the warn limiter lets one line per key through per interval and counts the rest") {
  shoal::log::WarnLimiter limiter(std::chrono::seconds(10));
  const auto t0 = shoal::log::WarnLimiter::Clock::time_point{} + std::chrono::hours(1);
  CHECK(limiter.admit("a", t0) == 0u);
  CHECK_FALSE(limiter.admit("a", t0 + std::chrono::seconds(1)).has_value());
  CHECK_FALSE(limiter.admit("a", t0 + std::chrono::seconds(9)).has_value());
  CHECK(limiter.admit("b", t0 + std::chrono::seconds(9)) == 0u);  // keys are independent
  CHECK(limiter.admit("a", t0 + std::chrono::seconds(10)) == 2u);
}

// The sealed packet: round trips, every changed bit and every truncation refused with its cause,
// replays and stale packets refused, and a key rotation in three steps across hosts.
#include "wire/sealed_packet.hpp"

#include <doctest/doctest.h>

#include <array>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

using namespace shoal::wire;

namespace {

constexpr int64_t kNow = 1'700'000'000'000;
// Every packet here is sealed for one host, which knows itself by its advertised address and by the
// address packets arrive at.
constexpr std::string_view kTo = "10.0.0.2:7946";
constexpr std::array<std::string_view, 2> kHereArray = {"192.168.0.2:7946", "10.0.0.2:7946"};
const Destinations kHere = kHereArray;

ClusterKey key_of(unsigned char fill) {
  std::array<unsigned char, 32> b{};
  b.fill(fill);
  return make_cluster_key(b);
}

KeyRing ring(std::vector<ClusterKey> keys) {
  auto r = KeyRing::from_keys(std::move(keys));
  REQUIRE(r.ok());
  return *r;
}

std::vector<std::byte> bytes_of(std::string_view s) {
  std::vector<std::byte> out(s.size());
  if (!s.empty()) std::memcpy(out.data(), s.data(), s.size());
  return out;
}

std::string text_of(const std::vector<std::byte>& b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

OpenCause cause_of(const PacketSealer& receiver, std::span<const std::byte> sealed, int64_t now = kNow) {
  ReplayGuard guard;
  auto r = receiver.open(sealed, kHere, now, guard);
  REQUIRE_FALSE(r.ok());
  return r.error().cause;
}

}  // namespace

TEST_CASE("a sealed packet opens to its plaintext and carries 61 bytes of overhead") {
  PacketSealer a(ring({key_of(1)}));
  PacketSealer b(ring({key_of(1)}));
  ReplayGuard guard;
  for (const std::string_view text : {std::string_view("ping from host-a"), std::string_view()}) {
    const auto sealed = a.seal(bytes_of(text), kTo, kNow);
    CHECK(sealed.size() == text.size() + kSealOverheadBytes);
    CHECK(looks_sealed(sealed));
    auto opened = b.open(sealed, kHere, kNow + 3, guard);
    REQUIRE(opened.ok());
    CHECK(text_of(*opened) == text);
  }
  CHECK(a.counter() == 2);
}

TEST_CASE("the header is laid out as documented: magic, version, key id, sender id, counter, time, destination") {
  PacketSealer a(ring({key_of(1)}));
  (void)a.seal(bytes_of("x"), kTo, kNow);
  const auto p = a.seal(bytes_of("x"), kTo, kNow);
  CHECK(std::memcmp(p.data(), "SHLK", 4) == 0);
  CHECK(p[4] == std::byte{2});
  const uint32_t id = a.keys().sending().id;
  for (size_t i = 0; i < 4; ++i) CHECK(p[5 + i] == std::byte(id >> (8 * i)));
  CHECK(std::memcmp(p.data() + 9, a.sender_id().data(), 16) == 0);
  CHECK(p[25] == std::byte{2});  // the second packet's counter, little endian
  for (size_t i = 1; i < 8; ++i) CHECK(p[25 + i] == std::byte{0});
  for (size_t i = 0; i < 8; ++i) CHECK(p[33 + i] == std::byte(uint64_t(kNow) >> (8 * i)));
  const uint32_t hint = destination_hint(kTo);
  for (size_t i = 0; i < 4; ++i) CHECK(p[41 + i] == std::byte(hint >> (8 * i)));
  CHECK(p.size() == 45 + 1 + 16);
}

TEST_CASE("two sealers draw different sender ids") {
  PacketSealer a(ring({key_of(1)}));
  PacketSealer b(ring({key_of(1)}));
  CHECK(a.sender_id() != b.sender_id());
}

TEST_CASE("every flipped bit of a sealed packet is refused with the cause of the field it hit") {
  PacketSealer a(ring({key_of(1)}));
  const auto sealed = a.seal(bytes_of("hello"), kTo, kNow);
  REQUIRE(sealed.size() == 66);
  for (size_t pos = 0; pos < sealed.size(); ++pos) {
    for (int bit = 0; bit < 8; ++bit) {
      CAPTURE(pos);
      CAPTURE(bit);
      auto flipped = sealed;
      flipped[pos] ^= std::byte(1u << bit);
      ReplayGuard guard;
      auto r = a.open(flipped, kHere, kNow, guard);
      REQUIRE_FALSE(r.ok());
      const OpenCause want = pos < 4                 ? OpenCause::not_sealed
                             : pos == 4              ? OpenCause::bad_version
                             : pos < 9               ? OpenCause::unknown_key
                             : pos >= 41 && pos < 45 ? OpenCause::wrong_destination
                                                     : OpenCause::bad_tag;  // nonce, time, ciphertext, tag
      CHECK(r.error().cause == want);
      CHECK(guard.sender_count() == 0);  // nothing unauthenticated reaches the guard
    }
  }
}

TEST_CASE("every truncation of a sealed packet is refused as truncated or bad_tag") {
  PacketSealer a(ring({key_of(1)}));
  const auto sealed = a.seal(bytes_of("a payload of some twenty bytes"), kTo, kNow);
  for (size_t len = 0; len < sealed.size(); ++len) {
    CAPTURE(len);
    const OpenCause c = cause_of(a, std::span(sealed.data(), len));
    CHECK(c == (len < kSealOverheadBytes ? OpenCause::truncated : OpenCause::bad_tag));
  }
}

TEST_CASE("random bytes, with or without the magic, are refused and never crash") {
  PacketSealer a(ring({key_of(1)}));
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::vector<std::byte> junk(rng() % 200);
    for (auto& b : junk) b = std::byte(rng());
    if (i % 2 && junk.size() >= 9) {
      std::memcpy(junk.data(), "SHLK\x02", 5);
      const uint32_t id = a.keys().sending().id;
      for (size_t k = 0; k < 4; ++k) junk[5 + k] = std::byte(id >> (8 * k));
    }
    ReplayGuard guard;
    CHECK_FALSE(a.open(junk, kHere, kNow, guard).ok());
  }
}

TEST_CASE("bytes without the magic are not_sealed and looks_sealed tells them apart") {
  PacketSealer a(ring({key_of(1)}));
  const auto plain = bytes_of("SHL\x01 an unsealed shoal packet");
  CHECK_FALSE(looks_sealed(plain));
  CHECK(cause_of(a, plain) == OpenCause::not_sealed);
  CHECK(looks_sealed(a.seal(plain, kTo, kNow)));
}

TEST_CASE("the same bytes delivered twice are refused as replayed") {
  PacketSealer a(ring({key_of(1)}));
  ReplayGuard guard;
  const auto sealed = a.seal(bytes_of("once"), kTo, kNow);
  REQUIRE(a.open(sealed, kHere, kNow, guard).ok());
  auto again = a.open(sealed, kHere, kNow + 1'000, guard);
  REQUIRE_FALSE(again.ok());
  CHECK(again.error().cause == OpenCause::replayed);
}

TEST_CASE("a packet sent longer ago than the window is refused as stale") {
  PacketSealer a(ring({key_of(1)}));
  ReplayGuard guard(60'000);
  const auto sealed = a.seal(bytes_of("old news"), kTo, kNow - 61'000);
  auto r = a.open(sealed, kHere, kNow, guard);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().cause == OpenCause::stale);
  CHECK(r.error().message.find("61000 ms") != std::string::npos);
}

TEST_CASE("a packet sealed under a key this host does not have is refused as unknown_key") {
  PacketSealer a(ring({key_of(1)}));
  PacketSealer b(ring({key_of(2)}));
  CHECK(cause_of(b, a.seal(bytes_of("hi"), kTo, kNow)) == OpenCause::unknown_key);
}

TEST_CASE("a packet whose key id names one of our keys but was sealed under another is bad_tag") {
  PacketSealer a(ring({key_of(1)}));
  PacketSealer b(ring({key_of(2)}));
  auto sealed = a.seal(bytes_of("hi"), kTo, kNow);
  const uint32_t id = b.keys().sending().id;  // what a colliding id of another cluster looks like
  for (size_t k = 0; k < 4; ++k) sealed[5 + k] = std::byte(id >> (8 * k));
  CHECK(cause_of(b, sealed) == OpenCause::bad_tag);
}

TEST_CASE("open cause names are the metric labels") {
  CHECK(open_cause_name(OpenCause::not_sealed) == "not_sealed");
  CHECK(open_cause_name(OpenCause::truncated) == "truncated");
  CHECK(open_cause_name(OpenCause::bad_version) == "bad_version");
  CHECK(open_cause_name(OpenCause::unknown_key) == "unknown_key");
  CHECK(open_cause_name(OpenCause::bad_tag) == "bad_tag");
  CHECK(open_cause_name(OpenCause::stale) == "stale");
  CHECK(open_cause_name(OpenCause::replayed) == "replayed");
  CHECK(open_cause_name(OpenCause::wrong_destination) == "wrong_destination");
  CHECK(reject_cause(OpenCause::wrong_destination) == RejectCause::wrong_destination);
  CHECK(reject_cause(OpenCause::not_sealed) == RejectCause::no_key);
  CHECK(reject_cause(OpenCause::unknown_key) == RejectCause::bad_auth);
}

TEST_CASE("a packet sealed for another host is refused as wrong_destination, before its guard sees it") {
  PacketSealer a(ring({key_of(1)}));
  ReplayGuard guard;
  const auto for_other = a.seal(bytes_of("for 10.0.0.3"), "10.0.0.3:7946", kNow);
  auto r = a.open(for_other, kHere, kNow, guard);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().cause == OpenCause::wrong_destination);
  CHECK(r.error().message.find("10.0.0.2:7946") != std::string::npos);  // says which addresses are ours
  CHECK(guard.sender_count() == 0);
  // The same host at another port is another destination too.
  CHECK(cause_of(a, a.seal(bytes_of("x"), "10.0.0.2:7947", kNow)) == OpenCause::wrong_destination);
  // Either of the receiver's addresses opens, and OpenedWith says which one and which key.
  OpenedWith with;
  REQUIRE(a.open(a.seal(bytes_of("x"), "192.168.0.2:7946", kNow), kHere, kNow, guard, &with).ok());
  CHECK(with.destination == "192.168.0.2:7946");
  REQUIRE(with.key != nullptr);
  CHECK(with.key->id == a.keys().sending().id);
}

TEST_CASE("the whole destination is under the tag: a hint rewritten to ours fails the tag") {
  PacketSealer a(ring({key_of(1)}));
  auto sealed = a.seal(bytes_of("for 10.0.0.3"), "10.0.0.3:7946", kNow);
  const uint32_t ours = destination_hint(kTo);
  for (size_t i = 0; i < 4; ++i) sealed[41 + i] = std::byte(ours >> (8 * i));
  CHECK(cause_of(a, sealed) == OpenCause::bad_tag);
}

TEST_CASE("a two-key ring opens packets sealed under either key") {
  PacketSealer old_only(ring({key_of(1)}));
  PacketSealer new_only(ring({key_of(2)}));
  PacketSealer both(ring({key_of(1), key_of(2)}));
  ReplayGuard guard;
  CHECK(both.open(old_only.seal(bytes_of("old"), kTo, kNow), kHere, kNow, guard).ok());
  CHECK(both.open(new_only.seal(bytes_of("new"), kTo, kNow), kHere, kNow, guard).ok());
}

TEST_CASE("a key rotation in three steps keeps every pair of hosts talking when each step completes") {
  const ClusterKey old_key = key_of(1), new_key = key_of(2);
  PacketSealer a(ring({old_key}));
  PacketSealer b(ring({old_key}));
  ReplayGuard at_a, at_b;
  int64_t now = kNow;
  // Each host seals a fresh packet for the other, as gossip would.
  auto a_to_b = [&] { return b.open(a.seal(bytes_of("from a"), kTo, now), kHere, now, at_b); };
  auto b_to_a = [&] { return a.open(b.seal(bytes_of("from b"), kTo, now), kHere, now, at_a); };
  const SenderId a_id = a.sender_id();

  // Step 1: the new key becomes the second line; A is done, B is not yet. Both still send the old key.
  a.set_keys(ring({old_key, new_key}));
  CHECK(a_to_b().ok());
  CHECK(b_to_a().ok());
  b.set_keys(ring({old_key, new_key}));
  CHECK(a_to_b().ok());
  CHECK(b_to_a().ok());

  // Step 2: A sends with the new key. B has it since step 1, so it opens; a host still at step 0
  // would not, which is why step 1 must be finished everywhere first.
  now += 1'000;
  a.set_keys(ring({new_key, old_key}));
  CHECK(a.sender_id() == a_id);  // same sender and counter: B's replay window for A carries over
  CHECK(a_to_b().ok());
  CHECK(b_to_a().ok());
  PacketSealer lagging(ring({old_key}));
  CHECK(cause_of(lagging, a.seal(bytes_of("from a"), kTo, now), now) == OpenCause::unknown_key);

  // Step 3 on A before B finished step 2: B still sends the old key, which A no longer has.
  now += 1'000;
  a.set_keys(ring({new_key}));
  CHECK(a_to_b().ok());
  auto refused = b_to_a();
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().cause == OpenCause::unknown_key);
  // Once B finished step 2 (and then 3), both directions work again.
  b.set_keys(ring({new_key, old_key}));
  CHECK(a_to_b().ok());
  CHECK(b_to_a().ok());
  b.set_keys(ring({new_key}));
  CHECK(a_to_b().ok());
  CHECK(b_to_a().ok());
  CHECK(cause_of(lagging, b.seal(bytes_of("from b"), kTo, now), now) == OpenCause::unknown_key);
}

TEST_CASE("a packet replayed after a key change is still refused: the counter survives set_keys") {
  PacketSealer a(ring({key_of(1), key_of(2)}));
  PacketSealer b(ring({key_of(1), key_of(2)}));
  ReplayGuard guard;
  const auto before = a.seal(bytes_of("before"), kTo, kNow);
  REQUIRE(b.open(before, kHere, kNow, guard).ok());
  a.set_keys(ring({key_of(2), key_of(1)}));
  const auto after = a.seal(bytes_of("after"), kTo, kNow);
  REQUIRE(b.open(after, kHere, kNow, guard).ok());
  CHECK(a.counter() == 2);
  auto replay = b.open(before, kHere, kNow, guard);
  REQUIRE_FALSE(replay.ok());
  CHECK(replay.error().cause == OpenCause::replayed);
}

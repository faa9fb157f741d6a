// The connection handshake: both ends prove the key and derive the same keys, crosswise; a server or a
// client without the key is refused; a hello replayed to the same host, to another host, or answered by
// a reply of another connection is refused; the cipher is chosen from both offers; a rotation works.
#include "wire/stream_handshake.hpp"

#include <doctest/doctest.h>

#include <array>
#include <cstring>
#include <string_view>
#include <vector>

#include "wire/frame_cipher.hpp"

using namespace shoal::wire;

namespace {

constexpr int64_t kNow = 1'700'000'000'000;
constexpr std::string_view kServerAddr = "10.0.0.2:7946";
constexpr std::array<std::string_view, 2> kServerOwnArray = {"10.0.0.2:7946", "203.0.113.9:7946"};
const Destinations kServerOwn = kServerOwnArray;
constexpr std::array<std::string_view, 1> kOtherHostArray = {"10.0.0.3:7946"};
const Destinations kOtherHost = kOtherHostArray;
constexpr uint8_t kXChaCha = static_cast<uint8_t>(StreamCipher::xchacha20poly1305);
constexpr uint8_t kAes = static_cast<uint8_t>(StreamCipher::aes256gcm);

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

bool aes_here() { return (local_cipher_offer() & kAes) != 0; }

struct Done {
  StreamKeys client, server;
};

// A whole exchange between a client holding `client_keys` and a server holding `server_keys`.
Done handshake(const KeyRing& client_keys, const KeyRing& server_keys, uint8_t client_offer = kXChaCha,
               uint8_t server_offer = kXChaCha) {
  PacketSealer sealer(client_keys);
  const auto client = ClientHandshake::start(sealer, bytes_of("hello payload"), kServerAddr, kNow, client_offer);
  ReplayGuard guard;
  auto server = ServerHandshake::accept(server_keys, client.hello_message(), kServerOwn, kNow, guard, server_offer);
  REQUIRE_MESSAGE(server.ok(), server.error().detail);
  auto finished = client.finish(server->reply_message());
  REQUIRE_MESSAGE(finished.ok(), finished.error().detail);
  auto keys = server->finish(finished->proof);
  REQUIRE_MESSAGE(keys.ok(), keys.error().detail);
  return {finished->keys, *keys};
}

}  // namespace

TEST_CASE("both ends of a handshake derive the same keys, crosswise, and each direction its own") {
  const auto done = handshake(ring({key_of(1)}), ring({key_of(1)}));
  CHECK(done.client.send == done.server.receive);
  CHECK(done.client.receive == done.server.send);
  CHECK(done.client.send != done.client.receive);
  CHECK(done.client.send != key_of(1).bytes);  // never the cluster key itself
  // A second connection between the same hosts has keys of its own.
  const auto again = handshake(ring({key_of(1)}), ring({key_of(1)}));
  CHECK(again.client.send != done.client.send);
  CHECK(again.client.receive != done.client.receive);
}

TEST_CASE("the server gets the hello payload the client sealed, and its reply has the documented size") {
  PacketSealer sealer(ring({key_of(1)}));
  const auto client = ClientHandshake::start(sealer, bytes_of("the hello"), kServerAddr, kNow, kXChaCha);
  CHECK(client.hello_message().size() == kSealOverheadBytes + kHandshakeHelloPrefixBytes + 9);
  ReplayGuard guard;
  auto server = ServerHandshake::accept(ring({key_of(1)}), client.hello_message(), kServerOwn, kNow, guard, kXChaCha);
  REQUIRE(server.ok());
  CHECK(std::vector<std::byte>(server->hello().begin(), server->hello().end()) == bytes_of("the hello"));
  CHECK(server->reply_message().size() == kHandshakeReplyBytes);
}

TEST_CASE("a client with another key is refused at its hello, a server with another key at its reply") {
  PacketSealer sealer(ring({key_of(1)}));
  const auto client = ClientHandshake::start(sealer, bytes_of("hi"), kServerAddr, kNow, kXChaCha);
  ReplayGuard guard;
  auto refused = ServerHandshake::accept(ring({key_of(2)}), client.hello_message(), kServerOwn, kNow, guard, kXChaCha);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().cause == RejectCause::bad_auth);  // unknown_key, counted as bad_auth

  // A "server" without the key cannot answer: forge a reply of the right shape with another key's proof.
  PacketSealer other_sealer(ring({key_of(2)}));
  const auto other = ClientHandshake::start(other_sealer, bytes_of("hi"), kServerAddr, kNow, kXChaCha);
  ReplayGuard other_guard;
  auto other_server =
      ServerHandshake::accept(ring({key_of(2)}), other.hello_message(), kServerOwn, kNow, other_guard, kXChaCha);
  REQUIRE(other_server.ok());
  auto wrong = client.finish(other_server->reply_message());
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.error().cause == RejectCause::bad_auth);
}

TEST_CASE("a hello replayed to the same host is refused as replayed, to another host as wrong_destination") {
  PacketSealer sealer(ring({key_of(1)}));
  const auto client = ClientHandshake::start(sealer, bytes_of("hi"), kServerAddr, kNow, kXChaCha);
  ReplayGuard guard;
  REQUIRE(ServerHandshake::accept(ring({key_of(1)}), client.hello_message(), kServerOwn, kNow, guard, kXChaCha).ok());
  auto replayed = ServerHandshake::accept(ring({key_of(1)}), client.hello_message(), kServerOwn, kNow, guard, kXChaCha);
  REQUIRE_FALSE(replayed.ok());
  CHECK(replayed.error().cause == RejectCause::replayed);
  // Host B never saw it, so its guard would let it through: the destination refuses it.
  ReplayGuard at_b;
  auto elsewhere = ServerHandshake::accept(ring({key_of(1)}), client.hello_message(), kOtherHost, kNow, at_b, kXChaCha);
  REQUIRE_FALSE(elsewhere.ok());
  CHECK(elsewhere.error().cause == RejectCause::wrong_destination);
  CHECK(at_b.sender_count() == 0);
}

TEST_CASE("a hello replayed where the guard has forgotten it gets a reply, but never a proof to finish with") {
  PacketSealer sealer(ring({key_of(1)}));
  const auto client = ClientHandshake::start(sealer, bytes_of("hi"), kServerAddr, kNow, kXChaCha);
  ReplayGuard first;
  auto original = ServerHandshake::accept(ring({key_of(1)}), client.hello_message(), kServerOwn, kNow, first, kXChaCha);
  REQUIRE(original.ok());
  auto proof = client.finish(original->reply_message());
  REQUIRE(proof.ok());
  // The same host restarted (an empty guard): the replayed hello opens and is answered...
  ReplayGuard restarted;
  auto replay =
      ServerHandshake::accept(ring({key_of(1)}), client.hello_message(), kServerOwn, kNow, restarted, kXChaCha);
  REQUIRE(replay.ok());
  CHECK(replay->reply_message() != original->reply_message());  // a fresh server nonce
  // ...but the proof recorded from the original connection does not finish it.
  auto finished = replay->finish(proof->proof);
  REQUIRE_FALSE(finished.ok());
  CHECK(finished.error().cause == RejectCause::bad_auth);
}

TEST_CASE("a reply of another connection, a changed reply and a changed proof are refused") {
  PacketSealer sealer(ring({key_of(1)}));
  const auto a = ClientHandshake::start(sealer, bytes_of("a"), kServerAddr, kNow, kXChaCha);
  const auto b = ClientHandshake::start(sealer, bytes_of("b"), kServerAddr, kNow, kXChaCha);
  ReplayGuard guard;
  auto for_a = ServerHandshake::accept(ring({key_of(1)}), a.hello_message(), kServerOwn, kNow, guard, kXChaCha);
  auto for_b = ServerHandshake::accept(ring({key_of(1)}), b.hello_message(), kServerOwn, kNow, guard, kXChaCha);
  REQUIRE(for_a.ok());
  REQUIRE(for_b.ok());
  CHECK_FALSE(a.finish(for_b->reply_message()).ok());
  for (size_t i = 0; i < kHandshakeReplyBytes; ++i) {
    auto changed = for_a->reply_message();
    changed[i] ^= std::byte{0x10};
    CAPTURE(i);
    CHECK_FALSE(a.finish(changed).ok());
  }
  auto truncated = for_a->reply_message();
  truncated.pop_back();
  auto cut = a.finish(truncated);
  REQUIRE_FALSE(cut.ok());
  CHECK(cut.error().cause == RejectCause::malformed);
  auto proof = a.finish(for_a->reply_message());
  REQUIRE(proof.ok());
  CHECK_FALSE(for_b->finish(proof->proof).ok());  // a's proof does not finish b's connection
  auto changed_proof = proof->proof;
  changed_proof[31] ^= std::byte{1};
  CHECK_FALSE(for_a->finish(changed_proof).ok());
  CHECK_FALSE(for_a->finish(std::span(proof->proof).first(31)).ok());
  CHECK(for_a->finish(proof->proof).ok());
}

TEST_CASE("AES-256-GCM is chosen when both ends offer it, XChaCha20-Poly1305 otherwise") {
  CHECK(handshake(ring({key_of(1)}), ring({key_of(1)}), kXChaCha, kXChaCha | kAes).client.cipher ==
        StreamCipher::xchacha20poly1305);
  CHECK(handshake(ring({key_of(1)}), ring({key_of(1)}), kXChaCha | kAes, kXChaCha).server.cipher ==
        StreamCipher::xchacha20poly1305);
  const auto both = handshake(ring({key_of(1)}), ring({key_of(1)}), kXChaCha | kAes, kXChaCha | kAes);
  CHECK(both.client.cipher == StreamCipher::aes256gcm);
  CHECK(both.server.cipher == StreamCipher::aes256gcm);
  CHECK(cipher_name(StreamCipher::aes256gcm) == "aes256gcm");
  // What this host offers: always XChaCha20-Poly1305, AES only with the CPU's support.
  CHECK((local_cipher_offer() & kXChaCha) != 0);
  MESSAGE("AES-256-GCM available here: " << aes_here());
}

TEST_CASE("a key rotation keeps connections opening at every step, with the key the client seals with") {
  const ClusterKey old_key = key_of(1), new_key = key_of(2);
  // Step 1 (new key second) at the server only; step 2 (new key first) at the client: still works.
  (void)handshake(ring({old_key}), ring({old_key, new_key}));
  (void)handshake(ring({new_key, old_key}), ring({old_key, new_key}));
  (void)handshake(ring({new_key}), ring({new_key, old_key}));
  // The keys derive from the key that sealed the hello: the same pair of rings gives keys that differ
  // from a connection sealed under the other key.
  const auto under_old = handshake(ring({old_key, new_key}), ring({new_key, old_key}));
  const auto under_new = handshake(ring({new_key, old_key}), ring({new_key, old_key}));
  CHECK(under_old.client.send == under_old.server.receive);
  CHECK(under_new.client.send == under_new.server.receive);
  // A server that already dropped the old key refuses a client that still seals with it.
  PacketSealer lagging(ring({old_key}));
  const auto client = ClientHandshake::start(lagging, bytes_of("hi"), kServerAddr, kNow, kXChaCha);
  ReplayGuard guard;
  auto refused = ServerHandshake::accept(ring({new_key}), client.hello_message(), kServerOwn, kNow, guard, kXChaCha);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().cause == RejectCause::bad_auth);
}

TEST_CASE("a sealed hello without the handshake's fields, or with no cipher in common, is refused") {
  PacketSealer sealer(ring({key_of(1)}));
  ReplayGuard guard;
  auto short_hello = ServerHandshake::accept(ring({key_of(1)}), sealer.seal(bytes_of("x"), kServerAddr, kNow),
                                             kServerOwn, kNow, guard, kXChaCha);
  REQUIRE_FALSE(short_hello.ok());
  CHECK(short_hello.error().cause == RejectCause::malformed);
  // A later version of the handshake.
  std::vector<std::byte> plain(kHandshakeHelloPrefixBytes, std::byte{0});
  plain[0] = std::byte{2};
  plain[kHandshakeHelloPrefixBytes - 1] = std::byte{kXChaCha};
  auto later = ServerHandshake::accept(ring({key_of(1)}), sealer.seal(plain, kServerAddr, kNow), kServerOwn, kNow,
                                       guard, kXChaCha);
  REQUIRE_FALSE(later.ok());
  CHECK(later.error().cause == RejectCause::bad_version);
  plain[0] = std::byte{kHandshakeVersion};
  plain[kHandshakeHelloPrefixBytes - 1] = std::byte{0x80};  // a cipher nobody has
  auto none = ServerHandshake::accept(ring({key_of(1)}), sealer.seal(plain, kServerAddr, kNow), kServerOwn, kNow, guard,
                                      kXChaCha);
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().cause == RejectCause::malformed);
}

TEST_CASE("the handshake's keys seal frames that open at the other end, in both directions") {
  const auto done = handshake(ring({key_of(1)}), ring({key_of(1)}), kXChaCha | kAes, local_cipher_offer());
  SealedFrames client(done.client), server(done.server);
  std::vector<std::byte> wire;
  client.send.append(wire, type_byte(FrameType::request), bytes_of("request"));
  Frame f{static_cast<uint8_t>(wire[4]), std::vector<std::byte>(wire.begin() + kFrameHeaderBytes, wire.end())};
  REQUIRE(server.receive.open(f).ok());
  CHECK(f.payload == bytes_of("request"));
  // A frame sealed by the server cannot pass for one of the client's: each direction has its own key.
  std::vector<std::byte> back;
  server.send.append(back, type_byte(FrameType::request), bytes_of("request"));
  Frame reflected{static_cast<uint8_t>(back[4]), std::vector<std::byte>(back.begin() + kFrameHeaderBytes, back.end())};
  CHECK_FALSE(server.receive.open(reflected).ok());
}

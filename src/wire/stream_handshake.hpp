// The handshake that opens every TCP connection of a keyed cluster, sans IO: both ends prove that they
// hold the cluster key, and derive the connection's own keys, one per direction (frame_cipher.hpp seals
// every frame after it with them). Three messages, on frames of their own:
//
//   1. client -> server  hello:  a sealed packet (sealed_packet.hpp) for the address the client dialled,
//                                holding [1 version][32 client nonce Nc][1 ciphers offered][hello payload]
//   2. server -> client  reply:  [1 version][32 server nonce Ns][1 cipher chosen][32 server proof]
//   3. client -> server  proof:  [32 client proof]
//
// then frames sealed with the connection's keys, both ways. With K the ring's key that message 1 names
// (the client's sending key; the server finds it by its id, so a key rotation needs nothing more), and
// BLAKE2b from libsodium (crypto_generichash, crypto_kdf), everything follows from one transcript hash:
//
//   T    = BLAKE2b-256(len(D) || D || len(m1) || m1 || Ns || cipher)   D: the destination m1 was sealed for
//   Khs  = kdf(K, id 1, "shoal-hs")                     a handshake key, never K itself
//   PRK  = BLAKE2b-256(key Khs, "shoal stream v1" || T)
//   server proof = kdf(PRK, 1)   client proof = kdf(PRK, 2)   client->server key = kdf(PRK, 3)
//   server->client key = kdf(PRK, 4)                    (kdf: crypto_kdf_derive_from_key, context "shoalcon")
//
// Why this is enough:
// - The server proves liveness and the key: its proof needs K and T, and T holds Nc, 32 fresh random bytes
//   of this connection that travel only inside m1's ciphertext. A recorded reply answers no other hello.
// - The client proves liveness and the key: its proof needs K and T, and T holds Ns, fresh from this
//   server for this connection. A recorded hello is worthless without it: replayed to the same host within
//   the replay guard's window it is refused at once (replayed); later, or after that host restarted, it
//   gets a reply but can never send the proof. Replayed to another host it is refused before any work
//   (wrong_destination): m1 is sealed for D, with D's whole text under m1's tag and in T.
// - Source and destination are bound: m1 carries the sender's identity (the hello payload: cluster, member
//   name, generation, advertised address) under the seal, and D is in T; a reply or a proof moved to
//   another connection fails, because that connection has other nonces.
// - The cipher is negotiated, never downgraded by a stranger: the offer is inside m1's seal and the
//   choice is in T, which both proofs cover. AES-256-GCM is chosen when both ends have hardware AES
//   (crypto_aead_aes256gcm_is_available), XChaCha20-Poly1305 otherwise.
// - Keys are fresh per connection (both nonces in T) and distinct per direction (different kdf ids), so
//   each key seals one direction of one connection; frames use a counter from 0 as the nonce, never reused.
// - K serves two primitives (the packet AEAD and, through kdf, these derivations): kdf is keyed BLAKE2b
//   with its own context, which nothing else computes under K.
// Not provided: forward secrecy. There is no Diffie-Hellman exchange (a symmetric key exchange costs
// microseconds, where X25519 costs a hundred on each end of every rendezvous request), so whoever later
// steals K and recorded a connection can derive its keys; rotate the key when a host is retired. And every
// holder of K is trusted alike: one member can claim another member's name.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "wire/cluster_key.hpp"
#include "wire/reject.hpp"
#include "wire/replay_guard.hpp"
#include "wire/sealed_packet.hpp"

namespace shoal::wire {

inline constexpr uint8_t kHandshakeVersion = 1;
inline constexpr size_t kHandshakeNonceBytes = 32;
inline constexpr size_t kHandshakeProofBytes = 32;
inline constexpr size_t kHandshakeReplyBytes = 1 + kHandshakeNonceBytes + 1 + kHandshakeProofBytes;  // 66
inline constexpr size_t kHandshakeHelloPrefixBytes = 1 + kHandshakeNonceBytes + 1;                   // 34
inline constexpr size_t kStreamKeyBytes = 32;

// The AEADs a connection may use, as bits of the offer.
enum class StreamCipher : uint8_t { xchacha20poly1305 = 1, aes256gcm = 2 };
std::string_view cipher_name(StreamCipher c);
// What this host offers: XChaCha20-Poly1305 always, AES-256-GCM where the CPU has AES-NI and CLMUL.
uint8_t local_cipher_offer();

// A connection's keys: what this end seals with, and what it opens with. Zeroed when destroyed.
struct StreamKeys {
  StreamCipher cipher = StreamCipher::xchacha20poly1305;
  std::array<unsigned char, kStreamKeyBytes> send{};
  std::array<unsigned char, kStreamKeyBytes> receive{};
  StreamKeys() = default;
  StreamKeys(const StreamKeys&) = default;
  StreamKeys& operator=(const StreamKeys&) = default;
  ~StreamKeys();
};

// The client's half. Not thread-safe; one per connection.
class ClientHandshake {
 public:
  // Message 1: `hello` sealed by `sealer` for `destination` (the address dialled, as ip:port text).
  // `offer` is a set of StreamCipher bits (tests choose; agents pass local_cipher_offer()).
  static ClientHandshake start(PacketSealer& sealer, std::span<const std::byte> hello, std::string_view destination,
                               int64_t now_unix_ms, uint8_t offer);

  const std::vector<std::byte>& hello_message() const { return m1_; }
  // Message 2 in: checks the server's proof and returns message 3 and this end's keys. A refusal is
  // bad_auth (a proof that does not verify: the server lacks the key, or the reply is not for this hello)
  // or malformed.
  struct Finished {
    std::vector<std::byte> proof;
    StreamKeys keys;
  };
  Result<Finished, DecodeError> finish(std::span<const std::byte> reply) const;

 private:
  ClientHandshake() = default;
  ClusterKey key_;
  std::string destination_;
  std::array<unsigned char, kHandshakeNonceBytes> nonce_{};
  uint8_t offer_ = 0;
  std::vector<std::byte> m1_;
};

// The server's half. Not thread-safe; one per connection.
class ServerHandshake {
 public:
  // Message 1 in: opens it with `keys` for one of `own` (this host's addresses), asks `guard` whether it is
  // fresh, and prepares message 2. `offer` is this host's (local_cipher_offer()). Refusals carry the
  // causes of reject.hpp: those of the sealed packet, malformed for a hello without the handshake's
  // fields or without a cipher both ends have.
  static Result<ServerHandshake, DecodeError> accept(const KeyRing& keys, std::span<const std::byte> hello_message,
                                                     Destinations own, int64_t now_unix_ms, ReplayGuard& guard,
                                                     uint8_t offer);

  // The hello payload the client sealed (stream_hello.hpp decodes it): authentic, not yet proven live.
  std::span<const std::byte> hello() const { return hello_; }
  const std::vector<std::byte>& reply_message() const { return m2_; }
  StreamCipher cipher() const { return cipher_; }
  // Message 3 in: this end's keys once the client's proof verifies (bad_auth otherwise).
  Result<StreamKeys, DecodeError> finish(std::span<const std::byte> proof) const;

 private:
  ServerHandshake() = default;
  std::vector<std::byte> hello_;
  std::vector<std::byte> m2_;
  StreamCipher cipher_ = StreamCipher::xchacha20poly1305;
  std::array<unsigned char, kStreamKeyBytes> client_proof_{};
  StreamKeys keys_;
};

}  // namespace shoal::wire

// The connection handshake's messages and key schedule (stream_handshake.hpp says why it is built so).
#include "wire/stream_handshake.hpp"

#include <sodium.h>

#include <cstring>

namespace shoal::wire {
namespace {

constexpr char kKdfContext[crypto_kdf_CONTEXTBYTES] = {'s', 'h', 'o', 'a', 'l', '-', 'h', 's'};
constexpr char kConnectionContext[crypto_kdf_CONTEXTBYTES] = {'s', 'h', 'o', 'a', 'l', 'c', 'o', 'n'};
constexpr std::string_view kPrkLabel = "shoal stream v1";
enum : uint64_t { kHandshakeKeyId = 1 };
enum : uint64_t { kServerProofId = 1, kClientProofId = 2, kClientToServerId = 3, kServerToClientId = 4 };
static_assert(crypto_kdf_KEYBYTES == kClusterKeyBytes && crypto_generichash_BYTES == kStreamKeyBytes);

using Secret = std::array<unsigned char, kStreamKeyBytes>;

// Zeroes a secret when it leaves scope.
struct Wiped {
  Secret bytes{};
  ~Wiped() { sodium_memzero(bytes.data(), bytes.size()); }
};

void put_le(crypto_generichash_state& st, uint64_t v, size_t n) {
  unsigned char b[8];
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<unsigned char>(v >> (8 * i));
  crypto_generichash_update(&st, b, n);
}

// PRK from the cluster key and the transcript (the header comment's T and PRK).
void derive_prk(const ClusterKey& key, std::string_view destination, std::span<const std::byte> m1,
                std::span<const unsigned char, kHandshakeNonceBytes> server_nonce, StreamCipher cipher, Secret& prk) {
  Secret transcript{};
  crypto_generichash_state st;
  crypto_generichash_init(&st, nullptr, 0, transcript.size());
  put_le(st, destination.size(), 2);
  crypto_generichash_update(&st, reinterpret_cast<const unsigned char*>(destination.data()), destination.size());
  put_le(st, m1.size(), 4);
  crypto_generichash_update(&st, reinterpret_cast<const unsigned char*>(m1.data()), m1.size());
  crypto_generichash_update(&st, server_nonce.data(), server_nonce.size());
  const auto c = static_cast<unsigned char>(cipher);
  crypto_generichash_update(&st, &c, 1);
  crypto_generichash_final(&st, transcript.data(), transcript.size());

  Wiped handshake_key;
  crypto_kdf_derive_from_key(handshake_key.bytes.data(), handshake_key.bytes.size(), kHandshakeKeyId, kKdfContext,
                             key.bytes.data());
  crypto_generichash_init(&st, handshake_key.bytes.data(), handshake_key.bytes.size(), prk.size());
  crypto_generichash_update(&st, reinterpret_cast<const unsigned char*>(kPrkLabel.data()), kPrkLabel.size());
  crypto_generichash_update(&st, transcript.data(), transcript.size());
  crypto_generichash_final(&st, prk.data(), prk.size());
  sodium_memzero(&st, sizeof st);  // it held the handshake key
}

void expand(const Secret& prk, uint64_t id, Secret& out) {
  crypto_kdf_derive_from_key(out.data(), out.size(), id, kConnectionContext, prk.data());
}

// The connection's keys as one end sees them.
StreamKeys keys_for(const Secret& prk, StreamCipher cipher, bool client) {
  StreamKeys k;
  k.cipher = cipher;
  expand(prk, client ? kClientToServerId : kServerToClientId, k.send);
  expand(prk, client ? kServerToClientId : kClientToServerId, k.receive);
  return k;
}

Unexpected<DecodeError> refuse(RejectCause cause, std::string detail) {
  return Unexpected<DecodeError>{DecodeError{cause, std::move(detail)}};
}

bool offered(uint8_t offer, StreamCipher c) { return (offer & static_cast<uint8_t>(c)) != 0; }

}  // namespace

std::string_view cipher_name(StreamCipher c) {
  return c == StreamCipher::aes256gcm ? "aes256gcm" : "xchacha20poly1305";
}

uint8_t local_cipher_offer() {
  if (!init_sodium()) return static_cast<uint8_t>(StreamCipher::xchacha20poly1305);
  uint8_t offer = static_cast<uint8_t>(StreamCipher::xchacha20poly1305);
  if (crypto_aead_aes256gcm_is_available() != 0) offer |= static_cast<uint8_t>(StreamCipher::aes256gcm);
  return offer;
}

StreamKeys::~StreamKeys() {
  sodium_memzero(send.data(), send.size());
  sodium_memzero(receive.data(), receive.size());
}

ClientHandshake ClientHandshake::start(PacketSealer& sealer, std::span<const std::byte> hello,
                                       std::string_view destination, int64_t now_unix_ms, uint8_t offer) {
  ClientHandshake h;
  h.key_ = sealer.keys().sending();
  h.destination_ = std::string(destination);
  h.offer_ = offer | static_cast<uint8_t>(StreamCipher::xchacha20poly1305);  // every build has it
  randombytes_buf(h.nonce_.data(), h.nonce_.size());
  std::vector<std::byte> plain(kHandshakeHelloPrefixBytes + hello.size());
  plain[0] = std::byte{kHandshakeVersion};
  std::memcpy(plain.data() + 1, h.nonce_.data(), h.nonce_.size());
  plain[1 + kHandshakeNonceBytes] = std::byte{h.offer_};
  if (!hello.empty()) std::memcpy(plain.data() + kHandshakeHelloPrefixBytes, hello.data(), hello.size());
  h.m1_ = sealer.seal(plain, destination, now_unix_ms);
  sodium_memzero(plain.data(), kHandshakeHelloPrefixBytes);  // the nonce is the only secret here
  return h;
}

Result<ClientHandshake::Finished, DecodeError> ClientHandshake::finish(std::span<const std::byte> reply) const {
  if (reply.size() != kHandshakeReplyBytes) {
    return refuse(RejectCause::malformed, "a handshake reply of " + std::to_string(reply.size()) + " bytes, not " +
                                              std::to_string(kHandshakeReplyBytes));
  }
  const auto* p = reinterpret_cast<const unsigned char*>(reply.data());
  if (p[0] != kHandshakeVersion) {
    return refuse(RejectCause::bad_version, "handshake version " + std::to_string(p[0]) + ", this build speaks " +
                                                std::to_string(kHandshakeVersion));
  }
  const auto server_nonce = std::span<const unsigned char, kHandshakeNonceBytes>(p + 1, kHandshakeNonceBytes);
  const uint8_t chosen = p[1 + kHandshakeNonceBytes];
  if ((chosen != static_cast<uint8_t>(StreamCipher::xchacha20poly1305) &&
       chosen != static_cast<uint8_t>(StreamCipher::aes256gcm)) ||
      !offered(offer_, StreamCipher(chosen))) {
    return refuse(RejectCause::malformed, "the server chose cipher " + std::to_string(chosen) + ", not one offered");
  }
  const auto cipher = StreamCipher(chosen);
  Wiped prk, expected;
  derive_prk(key_, destination_, m1_, server_nonce, cipher, prk.bytes);
  expand(prk.bytes, kServerProofId, expected.bytes);
  if (sodium_memcmp(expected.bytes.data(), p + 2 + kHandshakeNonceBytes, kHandshakeProofBytes) != 0) {
    return refuse(RejectCause::bad_auth,
                  "the server's handshake proof does not verify: it does not hold this cluster key, or the reply "
                  "belongs to another connection");
  }
  Finished out;
  Wiped proof;
  expand(prk.bytes, kClientProofId, proof.bytes);
  out.proof.resize(kHandshakeProofBytes);
  std::memcpy(out.proof.data(), proof.bytes.data(), kHandshakeProofBytes);
  out.keys = keys_for(prk.bytes, cipher, true);
  return out;
}

Result<ServerHandshake, DecodeError> ServerHandshake::accept(const KeyRing& keys,
                                                             std::span<const std::byte> hello_message, Destinations own,
                                                             int64_t now_unix_ms, ReplayGuard& guard, uint8_t offer) {
  OpenedWith with;
  auto opened = open_sealed(keys, hello_message, own, now_unix_ms, guard, &with);
  if (!opened) return refuse(reject_cause(opened.error().cause), opened.error().message);
  const std::vector<std::byte>& plain = *opened;
  if (plain.size() < kHandshakeHelloPrefixBytes) {
    return refuse(RejectCause::malformed, "a sealed hello without the handshake's nonce and cipher offer");
  }
  const auto* p = reinterpret_cast<const unsigned char*>(plain.data());
  if (p[0] != kHandshakeVersion) {
    return refuse(RejectCause::bad_version, "handshake version " + std::to_string(p[0]) + ", this build speaks " +
                                                std::to_string(kHandshakeVersion));
  }
  const uint8_t theirs = p[1 + kHandshakeNonceBytes];
  const uint8_t both = static_cast<uint8_t>(theirs & (offer | static_cast<uint8_t>(StreamCipher::xchacha20poly1305)));
  if (both == 0) return refuse(RejectCause::malformed, "no cipher in common (offered " + std::to_string(theirs) + ")");

  ServerHandshake h;
  h.cipher_ = offered(both, StreamCipher::aes256gcm) ? StreamCipher::aes256gcm : StreamCipher::xchacha20poly1305;
  h.hello_.assign(plain.begin() + kHandshakeHelloPrefixBytes, plain.end());
  std::array<unsigned char, kHandshakeNonceBytes> server_nonce{};
  randombytes_buf(server_nonce.data(), server_nonce.size());
  Wiped prk, server_proof;
  derive_prk(*with.key, with.destination, hello_message, server_nonce, h.cipher_, prk.bytes);
  expand(prk.bytes, kServerProofId, server_proof.bytes);
  expand(prk.bytes, kClientProofId, h.client_proof_);
  h.keys_ = keys_for(prk.bytes, h.cipher_, false);

  h.m2_.resize(kHandshakeReplyBytes);
  auto* out = reinterpret_cast<unsigned char*>(h.m2_.data());
  out[0] = kHandshakeVersion;
  std::memcpy(out + 1, server_nonce.data(), server_nonce.size());
  out[1 + kHandshakeNonceBytes] = static_cast<unsigned char>(h.cipher_);
  std::memcpy(out + 2 + kHandshakeNonceBytes, server_proof.bytes.data(), kHandshakeProofBytes);
  return h;
}

Result<StreamKeys, DecodeError> ServerHandshake::finish(std::span<const std::byte> proof) const {
  if (proof.size() != kHandshakeProofBytes ||
      sodium_memcmp(client_proof_.data(), proof.data(), kHandshakeProofBytes) != 0) {
    return refuse(RejectCause::bad_auth,
                  "the client's handshake proof does not verify: a replayed hello, or a client without this key");
  }
  return keys_;
}

}  // namespace shoal::wire

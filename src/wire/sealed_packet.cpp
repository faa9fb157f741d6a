// Sealing and opening packets with the cluster key for one destination (libsodium's XChaCha20-Poly1305
// IETF AEAD).
#include "wire/sealed_packet.hpp"

#include <sodium.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace shoal::wire {
namespace {

constexpr unsigned char kSealedMagic[4] = {'S', 'H', 'L', 'K'};
// Offsets into the header.
constexpr size_t kVersionAt = 4;
constexpr size_t kKeyIdAt = 5;
constexpr size_t kNonceAt = 9;  // sender id, then counter
constexpr size_t kCounterAt = kNonceAt + sizeof(SenderId);
constexpr size_t kSentAt = 33;
constexpr size_t kHintAt = 41;
static_assert(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES == sizeof(SenderId) + 8);
static_assert(crypto_aead_xchacha20poly1305_ietf_ABYTES == kSealTagBytes);
static_assert(crypto_aead_xchacha20poly1305_ietf_KEYBYTES == kClusterKeyBytes);
static_assert(kSentAt == kCounterAt + 8 && kHintAt == kSentAt + 8 && kSealHeaderBytes == kHintAt + 4);
constexpr std::string_view kHintContext = "shoal-destination";

// The associated data: the header as sent, then the destination's text (not sent).
struct AssociatedData {
  unsigned char bytes[kSealHeaderBytes + kMaxDestinationBytes];
  size_t size;
  AssociatedData(const unsigned char* header, std::string_view destination)
      : size(kSealHeaderBytes + destination.size()) {
    std::memcpy(bytes, header, kSealHeaderBytes);
    if (!destination.empty()) std::memcpy(bytes + kSealHeaderBytes, destination.data(), destination.size());
  }
};

uint64_t read_le(const unsigned char* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}

void write_le(unsigned char* p, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}

Unexpected<OpenError> refuse(OpenCause cause, std::string message) {
  return Unexpected<OpenError>{OpenError{cause, std::move(message)}};
}

std::string hex_prefix(const SenderId& id) {
  char out[9];
  std::snprintf(out, sizeof out, "%02x%02x%02x%02x", id[0], id[1], id[2], id[3]);
  return out;
}

}  // namespace

std::string_view open_cause_name(OpenCause c) {
  switch (c) {
    case OpenCause::not_sealed:
      return "not_sealed";
    case OpenCause::truncated:
      return "truncated";
    case OpenCause::bad_version:
      return "bad_version";
    case OpenCause::unknown_key:
      return "unknown_key";
    case OpenCause::bad_tag:
      return "bad_tag";
    case OpenCause::stale:
      return "stale";
    case OpenCause::replayed:
      return "replayed";
    case OpenCause::wrong_destination:
      return "wrong_destination";
    case OpenCause::count_:
      break;
  }
  return "unknown";
}

RejectCause reject_cause(OpenCause c) {
  switch (c) {
    case OpenCause::not_sealed:
      return RejectCause::no_key;
    case OpenCause::truncated:
      return RejectCause::truncated;  // too short to hold a seal
    case OpenCause::stale:
      return RejectCause::stale;
    case OpenCause::replayed:
      return RejectCause::replayed;
    case OpenCause::wrong_destination:
      return RejectCause::wrong_destination;
    default:
      return RejectCause::bad_auth;
  }
}

uint32_t destination_hint(std::string_view destination) {
  unsigned char digest[crypto_generichash_BYTES_MIN];
  crypto_generichash_state state;
  crypto_generichash_init(&state, nullptr, 0, sizeof digest);
  crypto_generichash_update(&state, reinterpret_cast<const unsigned char*>(kHintContext.data()), kHintContext.size());
  crypto_generichash_update(&state, reinterpret_cast<const unsigned char*>(destination.data()), destination.size());
  crypto_generichash_final(&state, digest, sizeof digest);
  return static_cast<uint32_t>(read_le(digest, 4));
}

bool looks_sealed(std::span<const std::byte> bytes) {
  return bytes.size() >= sizeof kSealedMagic && std::memcmp(bytes.data(), kSealedMagic, sizeof kSealedMagic) == 0;
}

Result<std::vector<std::byte>, OpenError> open_sealed(const KeyRing& keys, std::span<const std::byte> sealed,
                                                      Destinations destinations, int64_t now_unix_ms,
                                                      ReplayGuard& guard, OpenedWith* with) {
  const auto* p = reinterpret_cast<const unsigned char*>(sealed.data());
  if (!looks_sealed(sealed)) {
    // The first bytes of the magic and nothing more: a sealed packet cut short, not a stranger's.
    if (sealed.size() < sizeof kSealedMagic && (sealed.empty() || std::memcmp(p, kSealedMagic, sealed.size()) == 0)) {
      return refuse(OpenCause::truncated, std::to_string(sealed.size()) + " bytes, shorter than the magic");
    }
    return refuse(OpenCause::not_sealed, "no SHLK magic: the sender has no cluster key, or this is not shoal");
  }
  // The version before the length: another format may have another header.
  if (sealed.size() <= kVersionAt) return refuse(OpenCause::truncated, "sealed packet ends after its magic");
  if (p[kVersionAt] != kSealFormatVersion) {
    return refuse(OpenCause::bad_version, "sealed format version " + std::to_string(p[kVersionAt]) +
                                              ", this build reads " + std::to_string(kSealFormatVersion));
  }
  if (sealed.size() < kSealOverheadBytes) {
    return refuse(OpenCause::truncated, "sealed packet of " + std::to_string(sealed.size()) +
                                            " bytes, shorter than its " + std::to_string(kSealOverheadBytes) +
                                            "-byte header and tag");
  }
  const auto key_id = static_cast<uint32_t>(read_le(p + kKeyIdAt, 4));
  const ClusterKey* key = keys.find(key_id);
  if (key == nullptr) {
    char id[11];
    std::snprintf(id, sizeof id, "0x%08x", key_id);
    return refuse(OpenCause::unknown_key, std::string("key id ") + id + " is not in this host's key ring");
  }
  // The destination before the tag: a packet for another host would fail the tag too, but this says why.
  // The hint is not trusted: the tag below covers the destination's whole text.
  const auto hint = static_cast<uint32_t>(read_le(p + kHintAt, 4));
  std::string_view destination;
  bool found = false;
  for (const std::string_view d : destinations) {
    if (d.empty() || d.size() > kMaxDestinationBytes || destination_hint(d) != hint) continue;
    destination = d;
    found = true;
    break;
  }
  if (!found) {
    std::string mine;
    for (const std::string_view d : destinations) {
      if (!d.empty()) mine += (mine.empty() ? "" : ", ") + std::string(d);
    }
    return refuse(OpenCause::wrong_destination,
                  "sealed for another address than this host's (" + (mine.empty() ? std::string("none") : mine) +
                      "): captured on its way to another host and sent here?");
  }

  std::vector<std::byte> plain(sealed.size() - kSealOverheadBytes);
  unsigned long long plain_len = 0;
  const AssociatedData ad(p, destination);
  if (crypto_aead_xchacha20poly1305_ietf_decrypt(reinterpret_cast<unsigned char*>(plain.data()), &plain_len, nullptr,
                                                 p + kSealHeaderBytes, sealed.size() - kSealHeaderBytes, ad.bytes,
                                                 ad.size, p + kNonceAt, key->bytes.data()) != 0) {
    return refuse(OpenCause::bad_tag, "authentication failed: tampered, or sealed under another key with the same id");
  }

  // Authentic from here on: the guard may trust the sender id, counter and timestamp.
  SenderId sender;
  std::memcpy(sender.data(), p + kNonceAt, sender.size());
  const uint64_t counter = read_le(p + kCounterAt, 8);
  const auto sent_ms = static_cast<int64_t>(read_le(p + kSentAt, 8));
  switch (guard.check_and_record(sender, counter, sent_ms, now_unix_ms)) {
    case ReplayVerdict::fresh:
      if (with != nullptr) *with = OpenedWith{key, destination};
      return plain;
    case ReplayVerdict::replayed:
      return refuse(OpenCause::replayed,
                    "counter " + std::to_string(counter) + " of sender " + hex_prefix(sender) + " already seen");
    case ReplayVerdict::stale:
      break;
  }
  if (guard.outside_time_window(sent_ms, now_unix_ms)) {
    // The timestamp is the sender's: so far off that the difference overflows is possible too.
    int64_t behind_ms = 0;
    const std::string sent = __builtin_sub_overflow(now_unix_ms, sent_ms, &behind_ms)
                                 ? "at unix ms " + std::to_string(sent_ms) + ", this host's clock reads " +
                                       std::to_string(now_unix_ms)
                                 : std::to_string(behind_ms) + " ms before this host's clock";
    return refuse(OpenCause::stale, "sent " + sent + "; the window is " + std::to_string(guard.window_ms()) +
                                        " ms (are the clocks in sync?)");
  }
  return refuse(OpenCause::stale, "counter " + std::to_string(counter) + " of sender " + hex_prefix(sender) +
                                      " is too far behind, or the sender was forgotten");
}

PacketSealer::PacketSealer(KeyRing keys) : keys_(std::move(keys)) {
  if (auto ok = init_sodium(); !ok) {
    std::fprintf(stderr, "shoal: %s\n", ok.error().message.c_str());
    std::abort();  // without randomness the sender id, and so every nonce, could repeat
  }
  randombytes_buf(sender_.data(), sender_.size());
}

std::vector<std::byte> PacketSealer::seal(std::span<const std::byte> plaintext, std::string_view destination,
                                          int64_t now_unix_ms) {
  if (destination.size() > kMaxDestinationBytes) {
    std::fprintf(stderr, "shoal: a destination of %zu bytes cannot be sealed for\n", destination.size());
    std::abort();  // addresses are ours (ip:port text); a longer one is a bug, not input
  }
  const ClusterKey& key = keys_.sending();
  std::vector<std::byte> out(kSealOverheadBytes + plaintext.size());
  auto* p = reinterpret_cast<unsigned char*>(out.data());
  std::memcpy(p, kSealedMagic, sizeof kSealedMagic);
  p[kVersionAt] = kSealFormatVersion;
  write_le(p + kKeyIdAt, key.id, 4);
  std::memcpy(p + kNonceAt, sender_.data(), sender_.size());
  write_le(p + kCounterAt, ++counter_, 8);  // never reused: 2^64 packets will not be sent
  write_le(p + kSentAt, static_cast<uint64_t>(now_unix_ms), 8);
  write_le(p + kHintAt, destination_hint(destination), 4);
  unsigned long long sealed_len = 0;
  const AssociatedData ad(p, destination);
  crypto_aead_xchacha20poly1305_ietf_encrypt(p + kSealHeaderBytes, &sealed_len,
                                             reinterpret_cast<const unsigned char*>(plaintext.data()), plaintext.size(),
                                             ad.bytes, ad.size, nullptr, p + kNonceAt, key.bytes.data());
  return out;
}

}  // namespace shoal::wire

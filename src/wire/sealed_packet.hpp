// The sealed packet: every UDP datagram, and the first message (hello) of every TCP connection, sealed
// with XChaCha20-Poly1305 under the cluster key for one destination address, so that hosts without the
// key are refused and a packet captured on its way to one host is refused by every other. Layout:
//   [4 magic "SHLK"][1 format version = 2][4 key id LE][24 nonce = 16 sender id || 8 counter LE]
//   [8 sent unix ms LE][4 destination hint LE][ciphertext][16 tag]
// The associated data is the 45-byte header followed by the destination's full text ("10.0.0.2:7946"),
// which is not sent: the receiver supplies its own address, so a packet opens only at the address it was
// sealed for, with the whole address under the tag. The hint (the first 4 bytes of an unkeyed BLAKE2b of
// the destination) only lets a receiver tell "meant for another host" (wrong_destination) from "tampered"
// (bad_tag) without trying its addresses one by one; a collision of hints still fails the tag.
// 61 bytes of overhead: a 1400-byte gossip packet is 1461 sealed, 1489 with IPv4 and UDP headers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.hpp"
#include "wire/cluster_key.hpp"
#include "wire/reject.hpp"
#include "wire/replay_guard.hpp"

namespace shoal::wire {

inline constexpr uint8_t kSealFormatVersion = 2;
inline constexpr size_t kSealHeaderBytes = 45;
inline constexpr size_t kSealTagBytes = 16;
inline constexpr size_t kSealOverheadBytes = kSealHeaderBytes + kSealTagBytes;  // 61
// A destination is an address's text; longer ones are refused when sealing or opening (an IPv6 address
// with brackets and a port is at most 47 characters).
inline constexpr size_t kMaxDestinationBytes = 64;

enum class OpenCause : uint8_t {
  not_sealed,         // no "SHLK" magic: a peer without a cluster key, or not shoal traffic
  truncated,          // shorter than the sealed header and tag
  bad_version,        // a sealed format this build does not read
  unknown_key,        // a key id not in this host's ring (another cluster, or a rotation step skipped)
  bad_tag,            // tampered, or sealed under another key whose id collides with one of ours
  stale,              // authentic but sent too long ago (or in the future), or too far behind in counters
  replayed,           // authentic and already delivered once
  wrong_destination,  // sealed for an address that is not one of this receiver's
  count_
};
inline constexpr size_t kOpenCauses = static_cast<size_t>(OpenCause::count_);

// snake_case, for metric labels: "not_sealed", "truncated", "bad_version", "unknown_key", "bad_tag",
// "stale", "replayed", "wrong_destination".
std::string_view open_cause_name(OpenCause c);
// How a receiver counts each cause (reject.hpp): not_sealed is no_key, truncated and the ones named alike
// keep their names, every other one is bad_auth.
RejectCause reject_cause(OpenCause c);

struct OpenError {
  OpenCause cause;
  std::string message;  // for the log line (rate limited by the caller)
};

// True when the bytes start with the sealed magic, so a receiver without a key can count "sealed
// packet, but no key here" apart from garbage.
bool looks_sealed(std::span<const std::byte> bytes);

// The receiver's own addresses: a packet opens only if it was sealed for one of them. Usually its
// advertised address and the address the packet actually arrived at (which differ behind NAT or on a
// host with several addresses); empty strings are skipped.
using Destinations = std::span<const std::string_view>;

// What opened a packet, for a receiver that needs more than its plaintext (the stream handshake).
struct OpenedWith {
  const ClusterKey* key = nullptr;  // the ring's key whose id the packet named
  std::string_view destination;     // the element of Destinations it was sealed for
};

// Opens a sealed packet with the keys of `keys` for one of `destinations`, then asks `guard` whether it is
// fresh (only after the tag verified). Never trusts the bytes: every failure is an OpenError, never a
// crash. `with`, when not null, is filled in on success.
Result<std::vector<std::byte>, OpenError> open_sealed(const KeyRing& keys, std::span<const std::byte> sealed,
                                                      Destinations destinations, int64_t now_unix_ms,
                                                      ReplayGuard& guard, OpenedWith* with = nullptr);

// The destination hint of the layout above, for a destination's text.
uint32_t destination_hint(std::string_view destination);

// Seals with the first key of its ring and opens with any key of it. Its sender id (random, drawn at
// construction) and counter (1, 2, 3, ...) make each nonce unique; they survive set_keys, so a
// receiver's replay window for this sender carries across a key change.
//
// Not thread-safe: seal and set_keys mutate; the agent calls them from its one event-loop thread.
// open is const but updates the guard it is given, which belongs to the same thread.
class PacketSealer {
 public:
  explicit PacketSealer(KeyRing keys);

  // Seals for `destination` (at most kMaxDestinationBytes; longer aborts: a caller's bug).
  std::vector<std::byte> seal(std::span<const std::byte> plaintext, std::string_view destination, int64_t now_unix_ms);
  Result<std::vector<std::byte>, OpenError> open(std::span<const std::byte> sealed, Destinations destinations,
                                                 int64_t now_unix_ms, ReplayGuard& guard,
                                                 OpenedWith* with = nullptr) const {
    return open_sealed(keys_, sealed, destinations, now_unix_ms, guard, with);
  }

  // Swaps the ring (a key file reloaded on SIGHUP), keeping the sender id and counter.
  void set_keys(KeyRing keys) { keys_ = std::move(keys); }
  const KeyRing& keys() const { return keys_; }
  const SenderId& sender_id() const { return sender_; }
  // The counter of the last sealed packet (0 before the first).
  uint64_t counter() const { return counter_; }

 private:
  KeyRing keys_;
  SenderId sender_{};
  uint64_t counter_ = 0;
};

}  // namespace shoal::wire

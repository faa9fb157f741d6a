// The sealed packet: every UDP datagram, and the first frame (hello) of every TCP connection, sealed
// with XChaCha20-Poly1305 under the cluster key, so hosts without the key are refused. Layout:
//   [4 magic "SHLK"][1 format version = 1][4 key id LE][24 nonce = 16 sender id || 8 counter LE]
//   [8 sent unix ms LE][ciphertext][16 tag]
// The 41-byte header is the associated data: none of it can be changed without failing the tag.
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
#include "wire/replay_guard.hpp"

namespace shoal::wire {

inline constexpr uint8_t kSealFormatVersion = 1;
inline constexpr size_t kSealHeaderBytes = 41;
inline constexpr size_t kSealTagBytes = 16;
inline constexpr size_t kSealOverheadBytes = kSealHeaderBytes + kSealTagBytes;  // 57

enum class OpenCause : uint8_t {
  not_sealed,   // no "SHLK" magic: a peer without a cluster key, or not shoal traffic
  truncated,    // shorter than the sealed header and tag
  bad_version,  // a sealed format this build does not read
  unknown_key,  // a key id not in this host's ring (another cluster, or a rotation step skipped)
  bad_tag,      // tampered, or sealed under another key whose id collides with one of ours
  stale,        // authentic but sent too long ago (or in the future), or too far behind in counters
  replayed,     // authentic and already delivered once
  count_
};
inline constexpr size_t kOpenCauses = static_cast<size_t>(OpenCause::count_);

// snake_case, for metric labels: "not_sealed", "truncated", "bad_version", "unknown_key", "bad_tag",
// "stale", "replayed".
std::string_view open_cause_name(OpenCause c);

struct OpenError {
  OpenCause cause;
  std::string message;  // for the log line (rate limited by the caller)
};

// True when the bytes start with the sealed magic, so a receiver without a key can count "sealed
// packet, but no key here" apart from garbage.
bool looks_sealed(std::span<const std::byte> bytes);

// Opens a sealed packet with the keys of `keys`, then asks `guard` whether it is fresh (only after the
// tag verified). Never trusts the bytes: every failure is an OpenError, never a crash.
Result<std::vector<std::byte>, OpenError> open_sealed(const KeyRing& keys, std::span<const std::byte> sealed,
                                                      int64_t now_unix_ms, ReplayGuard& guard);

// Seals with the first key of its ring and opens with any key of it. Its sender id (random, drawn at
// construction) and counter (1, 2, 3, ...) make each nonce unique; they survive set_keys, so a
// receiver's replay window for this sender carries across a key change.
//
// Not thread-safe: seal and set_keys mutate; the agent calls them from its one event-loop thread.
// open is const but updates the guard it is given, which belongs to the same thread.
class PacketSealer {
 public:
  explicit PacketSealer(KeyRing keys);

  std::vector<std::byte> seal(std::span<const std::byte> plaintext, int64_t now_unix_ms);
  Result<std::vector<std::byte>, OpenError> open(std::span<const std::byte> sealed, int64_t now_unix_ms,
                                                 ReplayGuard& guard) const {
    return open_sealed(keys_, sealed, now_unix_ms, guard);
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

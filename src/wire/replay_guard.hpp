// Replay protection for sealed packets: per sender, the highest counter seen and a 64-counter sliding
// window (IPsec style), plus a time window on the sender's timestamp. Sans-IO: time comes in as unix ms.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <list>
#include <optional>
#include <unordered_map>

namespace shoal::wire {

// Chosen at random by each PacketSealer when it is created; with the counter it forms the nonce.
using SenderId = std::array<unsigned char, 16>;

enum class ReplayVerdict : uint8_t {
  fresh,     // first time seen: recorded, deliver it
  replayed,  // this sender's counter was already seen
  stale,     // sent too far from now, too far behind the sender's newest counter, or possibly a replay of
             // a sender this guard has forgotten (see below)
};

inline constexpr int64_t kDefaultReplayWindowMs = 60'000;
// Sized for the largest job shoal is built for: 25,000 hosts, each sealing as one sender per channel, and
// a new sender id for every restart within window_ms, with room to spare (the old bound, 4,096, forced
// evictions in any job past about 4,000 hosts). Only authenticated senders take a slot (about 150 B each, so at most
// ~10 MB per guard when full, and only key holders can fill it).
inline constexpr size_t kDefaultReplaySenders = 65'536;
// How far behind the newest counter of a sender a packet may arrive and still be accepted once.
inline constexpr uint64_t kReplayWindowCounters = 64;

// Call check_and_record ONLY AFTER the packet's AEAD tag has verified: the sender id, counter and
// timestamp are then the sender's own, and packets from hosts without the key cannot fill the table
// or push a real sender's window forward.
//
// Memory is bounded by max_senders. A sender not heard from for longer than window_ms is forgotten
// first; if the table is still full, the least recently heard one is evicted. Forgetting never lets
// a replay through: the guard remembers the newest timestamp of every sender it forgot, and refuses as
// stale a packet of an unknown sender sent at or before it. The price, only after an eviction forced
// by a full table, is that a new sender whose clock is behind that timestamp is refused until its
// clock passes it (at most window_ms).
//
// Note the counter window is in the sender's own counter space: a sender that seals for many peers
// advances its counter for all of them, so two packets to one receiver can be reordered only if fewer
// than 64 packets were sealed between them. Use one guard per channel (UDP, TCP hellos).
//
// Not thread-safe: one receiving loop owns a guard.
class ReplayGuard {
 public:
  explicit ReplayGuard(int64_t window_ms = kDefaultReplayWindowMs, size_t max_senders = kDefaultReplaySenders);

  ReplayVerdict check_and_record(const SenderId& sender, uint64_t counter, int64_t sent_unix_ms, int64_t now_unix_ms);

  int64_t window_ms() const { return window_ms_; }
  // |now - sent| > window_ms: the time half of the stale verdict, for messages.
  bool outside_time_window(int64_t sent_unix_ms, int64_t now_unix_ms) const;
  size_t sender_count() const { return senders_.size(); }
  // Senders evicted from a full table while still within the time window (a metric: it should be 0;
  // if not, raise max_senders).
  uint64_t forced_evictions() const { return forced_evictions_; }

 private:
  struct Sender {
    uint64_t highest = 0;  // newest counter seen
    uint64_t seen = 0;     // bit i: counter highest - i was seen
    int64_t newest_sent_ms = 0;
    int64_t last_heard_ms = 0;  // receiver's time of the last fresh packet
    std::list<SenderId>::iterator recency;
  };
  // Sender ids are random and only authenticated ones get here, so their first bytes are a fine hash.
  struct SenderIdHash {
    size_t operator()(const SenderId& id) const {
      size_t h;
      std::memcpy(&h, id.data(), sizeof h);
      return h;
    }
  };

  void make_room(int64_t now_unix_ms);
  void forget(std::list<SenderId>::iterator oldest);

  int64_t window_ms_;
  size_t max_senders_;
  std::unordered_map<SenderId, Sender, SenderIdHash> senders_;
  std::list<SenderId> recency_;        // least recently heard first
  std::optional<int64_t> forgotten_sent_horizon_ms_;  // newest timestamp of any forgotten sender (none yet)
  uint64_t forced_evictions_ = 0;
};

}  // namespace shoal::wire

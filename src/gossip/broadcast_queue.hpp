// The bounded queue of updates waiting to be piggybacked: fewest-sent first (newest first among
// equals), one entry per member (a newer update replaces the older one), each dropped after its
// retransmit limit, the most-sent dropped first when the queue is full.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace shoal::gossip {

class BroadcastQueue {
 public:
  explicit BroadcastQueue(size_t max_entries) : max_entries_(max_entries) {}

  // Queues `bytes` (an encoded update) about member `key`, replacing any queued one about it.
  void push(const std::string& key, std::string bytes);

  // Appends queued updates to `out` while they fit in budget_bytes (out's size included). Each
  // appended update counts as sent once and leaves the queue at its limit-th send. Returns how
  // many were appended.
  size_t fill(std::string& out, size_t budget_bytes, uint32_t limit);

  bool empty() const { return order_.empty(); }
  size_t size() const { return order_.size(); }
  bool contains(const std::string& key) const { return by_key_.count(key) != 0; }
  // Sends so far of the queued update about key (nullopt-like -1 when none is queued).
  int64_t transmits(const std::string& key) const;
  // Updates dropped because the queue was full.
  uint64_t dropped() const { return dropped_; }

 private:
  // (times sent, ~sequence, slot): the set's first element is the least-sent, newest update.
  struct Rank {
    uint32_t transmits;
    uint64_t inverse_seq;
    uint32_t slot;
    bool operator<(const Rank& o) const {
      return transmits != o.transmits ? transmits < o.transmits : inverse_seq < o.inverse_seq;
    }
  };
  struct Entry {
    std::string key;
    std::string bytes;
    Rank rank{};
  };
  void erase_slot(uint32_t slot);

  size_t max_entries_;
  uint64_t next_seq_ = 0;
  uint64_t dropped_ = 0;
  std::vector<Entry> entries_;  // by slot; freed slots are reused
  std::vector<uint32_t> free_;
  std::set<Rank> order_;
  std::unordered_map<std::string, uint32_t> by_key_;  // key -> slot; lookup only, never iterated
};

}  // namespace shoal::gossip

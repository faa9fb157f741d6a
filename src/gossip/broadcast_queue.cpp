// The piggyback queue: ordering, replacement by member, retransmit limit and overflow.
#include "gossip/broadcast_queue.hpp"

#include <limits>
#include <vector>

namespace shoal::gossip {
namespace {

// Looking further than this for a small update that still fits costs more than it gains.
constexpr size_t kMaxScan = 128;
// No encoded update is smaller than this; below it the packet is full.
constexpr size_t kMinUpdateBytes = 8;
// After this many queued updates that did not fit, the packet is as good as full.
constexpr size_t kMaxMisses = 8;

}  // namespace

void BroadcastQueue::erase_slot(uint32_t slot) {
  Entry& e = entries_[slot];
  order_.erase(e.rank);
  by_key_.erase(e.key);
  e.key.clear();
  e.bytes.clear();
  e.bytes.shrink_to_fit();
  free_.push_back(slot);
}

void BroadcastQueue::push(const std::string& key, std::string bytes) {
  if (auto it = by_key_.find(key); it != by_key_.end()) erase_slot(it->second);
  uint32_t slot;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else {
    slot = static_cast<uint32_t>(entries_.size());
    entries_.emplace_back();
  }
  Entry& e = entries_[slot];
  e.key = key;
  e.bytes = std::move(bytes);
  e.rank = Rank{0, std::numeric_limits<uint64_t>::max() - next_seq_++, slot};
  order_.insert(e.rank);
  by_key_.emplace(key, slot);
  while (order_.size() > max_entries_) {
    erase_slot(std::prev(order_.end())->slot);
    ++dropped_;
  }
}

size_t BroadcastQueue::fill(std::string& out, size_t budget_bytes, uint32_t limit) {
  std::vector<uint32_t> sent;
  size_t scanned = 0, misses = 0;
  for (auto it = order_.begin(); it != order_.end() && scanned < kMaxScan && misses < kMaxMisses; ++it, ++scanned) {
    if (out.size() + kMinUpdateBytes > budget_bytes) break;
    const std::string& bytes = entries_[it->slot].bytes;
    if (out.size() + bytes.size() > budget_bytes) {
      ++misses;
      continue;
    }
    out += bytes;
    sent.push_back(it->slot);
  }
  for (uint32_t slot : sent) {
    Entry& e = entries_[slot];
    if (e.rank.transmits + 1 >= limit) {
      erase_slot(slot);
      continue;
    }
    auto node = order_.extract(e.rank);
    ++e.rank.transmits;
    node.value() = e.rank;
    order_.insert(std::move(node));
  }
  return sent.size();
}

int64_t BroadcastQueue::transmits(const std::string& key) const {
  auto it = by_key_.find(key);
  return it == by_key_.end() ? -1 : static_cast<int64_t>(entries_[it->second].rank.transmits);
}

}  // namespace shoal::gossip

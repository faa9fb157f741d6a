// The core's one-shot timers: a binary heap ordered by (deadline, token) over a pool of actions.
// Cancelling marks the pool slot free and leaves the heap entry behind, to be dropped when it
// reaches the top; every operation leaves a live timer on top, so a cancelled timer never wakes
// the runtime. Two timers per probe made a node-based map allocate and free four times per probe.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "gossip/types.hpp"

namespace shoal::gossip {

template <class Action>
class TimerHeap {
 public:
  // Names one timer: its deadline, its token (unique, never 0) and where its action lives.
  struct Key {
    Time at{0};
    uint64_t token = 0;  // 0: no timer
    uint32_t slot = 0;
  };

  Key add(Time at, uint64_t token, Action action) {
    uint32_t slot;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
    } else {
      slot = static_cast<uint32_t>(pool_.size());
      pool_.emplace_back();
    }
    pool_[slot] = Entry{token, std::move(action)};
    heap_.push_back(Node{at, token, slot});
    std::push_heap(heap_.begin(), heap_.end(), later);
    ++live_;
    return Key{at, token, slot};
  }

  // A timer that fired or was cancelled already (or the empty key) is ignored.
  void cancel(const Key& k) {
    if (k.token == 0 || k.slot >= pool_.size() || pool_[k.slot].token != k.token) return;
    release(k.slot);
    prune();
  }

  bool empty() const { return live_ == 0; }
  size_t size() const { return live_; }
  // The earliest live deadline; only when !empty().
  Time next_at() const { return heap_.front().at; }

  // Removes the earliest timer if it is due at `now`, moving its action out; false otherwise.
  bool pop_due(Time now, Action& out) {
    if (heap_.empty() || heap_.front().at > now) return false;
    const uint32_t slot = heap_.front().slot;
    pop_top();
    out = std::move(pool_[slot].action);
    release(slot);
    prune();
    return true;
  }

 private:
  struct Node {
    Time at;
    uint64_t token;
    uint32_t slot;
  };
  struct Entry {
    uint64_t token = 0;  // 0: free
    Action action{};
  };
  static bool later(const Node& a, const Node& b) { return a.at != b.at ? a.at > b.at : a.token > b.token; }
  // Drops cancelled entries from the top, so that the top is live (or the heap empty).
  void prune() {
    while (!heap_.empty() && pool_[heap_.front().slot].token != heap_.front().token) pop_top();
  }
  void pop_top() {
    std::pop_heap(heap_.begin(), heap_.end(), later);
    heap_.pop_back();
  }
  void release(uint32_t slot) {
    pool_[slot] = Entry{};
    free_.push_back(slot);
    --live_;
  }

  std::vector<Node> heap_;  // may hold entries of cancelled timers
  std::vector<Entry> pool_;
  std::vector<uint32_t> free_;
  size_t live_ = 0;
};

}  // namespace shoal::gossip

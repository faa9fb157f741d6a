// EventQueue: the virtual clock and the pending events of a simulation, ordered by (time,
// sequence) so that events at the same instant run in the order they were scheduled. The next
// kAhead events wait in a small sorted buffer in front of a 4-ary heap, so that the harness can
// see what comes next and start loading the members those events will touch.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "gossip/types.hpp"

namespace shoal::sim {

using Time = gossip::Time;

enum class EventKind : uint8_t {
  start,            // a member's core is created and joins
  packet,           // a datagram reaches `node` from `from`
  stream_request,   // a stream request reaches `node` from `from`
  stream_response,  // the answer to stream `slot` reaches its requester
  stream_deadline,  // stream `slot` times out unless already answered
  tick,             // `node`'s core `channel` asked to be woken now
  resume,           // `node`'s pause `aux` ends
  action,           // a scenario's scheduled action `slot`
};

struct Event {
  Time at{0};
  uint64_t seq = 0;
  EventKind kind = EventKind::action;
  uint8_t channel = 0;  // which core of the node: 0 gossip, 1.. layers beside it
  uint32_t node = 0;
  uint32_t from = 0;
  uint32_t life = 0;  // the node's life when scheduled: events of an earlier life are stale
  uint32_t slot = 0;  // a byte buffer, a stream record or an action, depending on kind
  uint64_t aux = 0;
};

class EventQueue {
 public:
  static constexpr size_t kAhead = 7;

  Time now() const { return now_; }
  bool empty() const { return ahead_n_ == 0; }
  size_t size() const { return ahead_n_ + heap_.size(); }
  // The time of the next event; only when !empty().
  Time next_time() const { return ahead_[0].at; }
  // The event i places after the next one would pop now (0: the next), if i < kAhead and there are
  // that many; nullptr otherwise. For prefetching: what runs before it may still change the order.
  const Event* ahead(size_t i) const { return i < ahead_n_ ? &ahead_[i] : nullptr; }

  // Schedules e at e.at (an event in the past runs now). Returns its sequence number.
  uint64_t push(Event e);
  // Removes the next event and advances the clock to its time.
  Event pop();
  // Moves the clock forward to t when nothing is scheduled before it.
  void advance_to(Time t) {
    if (t > now_ && (empty() || ahead_[0].at >= t)) now_ = t;
  }

 private:
  static bool later(const Event& a, const Event& b) {
    if (a.at != b.at) return a.at > b.at;
    return a.seq > b.seq;
  }
  void heap_push(const Event& e);
  Event heap_pop();
  // Puts e into the sorted buffer (which has room), after every event that comes before it.
  void insert_ahead(const Event& e);

  // The earliest events, in order; every one comes before every event in the heap, and the buffer
  // is full whenever the heap is not empty.
  std::array<Event, kAhead> ahead_{};
  size_t ahead_n_ = 0;
  std::vector<Event> heap_;
  uint64_t next_seq_ = 0;
  Time now_{0};
};

}  // namespace shoal::sim

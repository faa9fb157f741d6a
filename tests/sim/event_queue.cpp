// EventQueue: the sorted buffer of the next events, and the heap behind it: 4-ary rather than
// binary, because at thousands of members the heap outgrows the cache and a 4-ary one is half as
// deep (each level one cache miss); its 4 children share one or two cache lines. Keys (time,
// sequence) are unique, so any such queue pops the same order.
#include "event_queue.hpp"

#include <algorithm>

namespace shoal::sim {

uint64_t EventQueue::push(Event e) {
  if (e.at < now_) e.at = now_;
  e.seq = next_seq_++;
  if (ahead_n_ < kAhead) {
    insert_ahead(e);  // the heap is empty
  } else if (later(ahead_[kAhead - 1], e)) {
    heap_push(ahead_[kAhead - 1]);
    --ahead_n_;
    insert_ahead(e);
  } else {
    heap_push(e);
  }
  return e.seq;
}

Event EventQueue::pop() {
  const Event top = ahead_[0];
  std::copy(ahead_.begin() + 1, ahead_.begin() + static_cast<std::ptrdiff_t>(ahead_n_), ahead_.begin());
  --ahead_n_;
  if (!heap_.empty()) ahead_[ahead_n_++] = heap_pop();
  now_ = top.at;
  return top;
}

void EventQueue::insert_ahead(const Event& e) {
  size_t i = ahead_n_;
  while (i > 0 && later(ahead_[i - 1], e)) {
    ahead_[i] = ahead_[i - 1];
    --i;
  }
  ahead_[i] = e;
  ++ahead_n_;
}

void EventQueue::heap_push(const Event& e) {
  size_t i = heap_.size();
  heap_.push_back(e);
  while (i > 0) {
    const size_t parent = (i - 1) / 4;
    if (!later(heap_[parent], e)) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = e;
}

Event EventQueue::heap_pop() {
  const Event top = heap_.front();
  const Event last = heap_.back();
  heap_.pop_back();
  const size_t n = heap_.size();
  if (n > 0) {
    size_t i = 0;
    for (;;) {
      const size_t first = 4 * i + 1;
      if (first >= n) break;
      size_t best = first;
      const size_t end = std::min(first + 4, n);
      for (size_t c = first + 1; c < end; ++c) {
        if (later(heap_[best], heap_[c])) best = c;
      }
      if (!later(last, heap_[best])) break;
      heap_[i] = heap_[best];
      i = best;
    }
    heap_[i] = last;
  }
  return top;
}

}  // namespace shoal::sim

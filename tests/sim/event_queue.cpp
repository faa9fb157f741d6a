// The binary heap behind EventQueue.
#include "event_queue.hpp"

#include <algorithm>

namespace shoal::sim {

uint64_t EventQueue::push(Event e) {
  if (e.at < now_) e.at = now_;
  e.seq = next_seq_++;
  heap_.push_back(e);
  std::push_heap(heap_.begin(), heap_.end(), later);
  return e.seq;
}

Event EventQueue::pop() {
  std::pop_heap(heap_.begin(), heap_.end(), later);
  Event e = heap_.back();
  heap_.pop_back();
  now_ = e.at;
  return e;
}

}  // namespace shoal::sim

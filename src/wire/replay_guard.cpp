// The replay guard's bookkeeping: sliding counter windows per sender, bounded by recency.
#include "wire/replay_guard.hpp"

#include <algorithm>

namespace shoal::wire {

ReplayGuard::ReplayGuard(int64_t window_ms, size_t max_senders)
    : window_ms_(std::max<int64_t>(window_ms, 0)),
      max_senders_(std::max<size_t>(max_senders, 1)) {
  senders_.reserve(max_senders_);
}

bool ReplayGuard::outside_time_window(int64_t sent_unix_ms, int64_t now_unix_ms) const {
  int64_t diff = 0;
  // A timestamp so far off that the difference overflows is outside any window.
  if (__builtin_sub_overflow(now_unix_ms, sent_unix_ms, &diff)) return true;
  return diff > window_ms_ || diff < -window_ms_;
}

ReplayVerdict ReplayGuard::check_and_record(const SenderId& sender, uint64_t counter, int64_t sent_unix_ms,
                                            int64_t now_unix_ms) {
  if (outside_time_window(sent_unix_ms, now_unix_ms)) return ReplayVerdict::stale;

  auto it = senders_.find(sender);
  if (it == senders_.end()) {
    // Unknown: a new sender, or one this guard forgot, whose packets up to its newest timestamp were
    // accepted once already.
    // (A horizon that starts at the lowest timestamp would refuse a first packet stamped with it.)
    if (forgotten_sent_horizon_ms_ && sent_unix_ms <= *forgotten_sent_horizon_ms_) return ReplayVerdict::stale;
    make_room(now_unix_ms);
    recency_.push_back(sender);
    senders_.emplace(sender, Sender{.highest = counter,
                                    .seen = 1,
                                    .newest_sent_ms = sent_unix_ms,
                                    .last_heard_ms = now_unix_ms,
                                    .recency = std::prev(recency_.end())});
    return ReplayVerdict::fresh;
  }

  Sender& s = it->second;
  if (counter > s.highest) {
    const uint64_t ahead = counter - s.highest;
    s.seen = ahead >= kReplayWindowCounters ? 1 : (s.seen << ahead) | 1;
    s.highest = counter;
  } else {
    const uint64_t behind = s.highest - counter;
    if (behind >= kReplayWindowCounters) return ReplayVerdict::stale;
    const uint64_t bit = uint64_t{1} << behind;
    if (s.seen & bit) return ReplayVerdict::replayed;
    s.seen |= bit;
  }
  s.newest_sent_ms = std::max(s.newest_sent_ms, sent_unix_ms);
  s.last_heard_ms = now_unix_ms;
  recency_.splice(recency_.end(), recency_, s.recency);  // now the most recently heard
  return ReplayVerdict::fresh;
}

void ReplayGuard::make_room(int64_t now_unix_ms) {
  // Forget the expired first: their packets are stale anyway. Recency order is call order, so the
  // oldest are at the front (a wall clock stepping back only delays their forgetting).
  while (!recency_.empty()) {
    const Sender& oldest = senders_.at(recency_.front());
    int64_t quiet_ms = 0;
    const bool overflow = __builtin_sub_overflow(now_unix_ms, oldest.last_heard_ms, &quiet_ms);
    if (!overflow && quiet_ms <= window_ms_) break;
    forget(recency_.begin());
  }
  if (senders_.size() >= max_senders_) {
    ++forced_evictions_;
    forget(recency_.begin());
  }
}

void ReplayGuard::forget(std::list<SenderId>::iterator oldest) {
  auto it = senders_.find(*oldest);
  forgotten_sent_horizon_ms_ = std::max(forgotten_sent_horizon_ms_.value_or(it->second.newest_sent_ms),
                                        it->second.newest_sent_ms);
  senders_.erase(it);
  recency_.erase(oldest);
}

}  // namespace shoal::wire

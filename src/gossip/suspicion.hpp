// Lifeguard's suspicion timer: it starts at the longest timeout and shrinks towards the shortest as
// independent members confirm the suspicion (the accuser is not counted, each confirmer once).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gossip/types.hpp"

namespace shoal::gossip {

// The bounds of one suspicion for a cluster of n members.
struct SuspicionBounds {
  Time min{0};
  Time max{0};
  uint32_t k = 0;  // confirmations that bring the timeout down to min
};

// min = min_base * max(1, log10 n), max = max_mult * min; k = 0 when n - 2 < k (too few members
// to ever confirm), as memberlist does.
SuspicionBounds suspicion_bounds(Time min_base, double max_mult, uint32_t k, size_t n);

// max(min, max - (max - min) * log(c + 1) / log(k + 1)); min when k == 0.
Time suspicion_timeout(const SuspicionBounds& b, uint32_t confirmations);

class SuspicionTimer {
 public:
  SuspicionTimer(Time start, SuspicionBounds bounds, std::string accuser);

  // Counts `who` as an independent confirmation; false when it is the accuser, was counted
  // already, or k confirmations are in (more cannot shorten the timer).
  bool confirm(const std::string& who);

  Time start() const { return start_; }
  Time deadline() const { return start_ + suspicion_timeout(bounds_, confirmations()); }
  uint32_t confirmations() const { return static_cast<uint32_t>(confirmers_.size()); }
  const std::string& accuser() const { return accuser_; }
  // Moves the whole timer later (this member was paused and could not hear refutations).
  void postpone(Time by) { start_ += by; }

 private:
  Time start_;
  SuspicionBounds bounds_;
  std::string accuser_;
  std::vector<std::string> confirmers_;  // at most k entries
};

}  // namespace shoal::gossip

// Lifeguard's local health multiplier (LHM): a member that keeps failing its own probes, misses
// the nacks its helpers should send, or has to refute suspicions of itself is probably the slow
// one, so it stretches its probe interval and timeouts by (score + 1) instead of accusing others.
#pragma once

#include <algorithm>
#include <cstdint>

#include "gossip/types.hpp"

namespace shoal::gossip {

class LocalHealth {
 public:
  // Why the score moves, with Lifeguard's deltas.
  static constexpr int kProbeFailed = +1;
  static constexpr int kMissedNack = +1;
  static constexpr int kRefuted = +1;
  static constexpr int kProbeSucceeded = -1;

  explicit LocalHealth(uint32_t max_score) : max_(static_cast<int>(max_score)) {}

  // Moves the score by delta, clamped to 0..max.
  void apply(int delta) { score_ = std::clamp(score_ + delta, 0, max_); }

  int score() const { return score_; }
  int max_score() const { return max_; }

  // A duration stretched by the current health: base * (score + 1).
  Time scale(Time base) const { return base * (score_ + 1); }

 private:
  int max_;
  int score_ = 0;
};

}  // namespace shoal::gossip

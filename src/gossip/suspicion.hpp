// Lifeguard's suspicion timer: it starts at the longest timeout and shrinks towards the shortest as
// independent members confirm the suspicion (the accuser is not counted, each confirmer once); and the
// refusal rule: a suspect whose own agent port refused this member and other members may die sooner.
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
  // The refusal rule (README, "Evidence from the data plane"): once this member saw the suspect's
  // agent port refuse a connection itself and refused_k other members said they saw the same, the
  // timeout is refused_min. refused_k == 0: the rule is off (too few members to confirm).
  Time refused_min{0};
  uint32_t refused_k = 0;
};

// min = min_base * max(1, log10 n), max = max_mult * min; k = 0 when n - 2 < k (too few members
// to ever confirm), as memberlist does.
SuspicionBounds suspicion_bounds(Time min_base, double max_mult, uint32_t k, size_t n);
// refused_k = min(wanted, n - 2): the members besides this one and the suspect; 0 turns the rule off.
uint32_t refusal_confirmations_needed(uint32_t wanted, size_t n);

// max(min, max - (max - min) * log(c + 1) / log(k + 1)); min when k == 0.
Time suspicion_timeout(const SuspicionBounds& b, uint32_t confirmations);

class SuspicionTimer {
 public:
  // At most this many other members' refusals are remembered (more cannot shorten the timer).
  static constexpr size_t kMaxRefusers = 8;

  SuspicionTimer(Time start, SuspicionBounds bounds, std::string accuser);

  // Counts `who` as an independent confirmation; false when it is the accuser, was counted
  // already, or k confirmations are in (more cannot shorten the timer).
  bool confirm(const std::string& who);
  // This member's own connection to the suspect's agent port was refused; false if known already.
  bool saw_refusal();
  // Another member (the accuser included) says the suspect's agent port refused it; false when `who`
  // was counted already, or enough are in.
  bool confirm_refusal(const std::string& who);
  // The suspect answered one of our probes after all: the refusals are void for this suspicion (a
  // member that answers a probe stays), and only the normal timeout applies from now on.
  void answered() { answered_ = true; }
  bool answered_already() const { return answered_; }

  Time start() const { return start_; }
  // The normal Lifeguard deadline, or start + refused_min once the refusal rule holds.
  Time deadline() const;
  uint32_t confirmations() const { return static_cast<uint32_t>(confirmers_.size()); }
  uint32_t refusals() const { return static_cast<uint32_t>(refusers_.size()); }
  bool self_refused() const { return self_refused_; }
  // Refused here, by refused_k others, and the suspect has not answered since.
  bool refusal_confirmed() const;
  const std::string& accuser() const { return accuser_; }
  // Moves the whole timer later (this member was paused and could not hear refutations).
  void postpone(Time by) { start_ += by; }

 private:
  Time start_;
  SuspicionBounds bounds_;
  std::string accuser_;
  std::vector<std::string> confirmers_;  // at most k entries
  std::vector<std::string> refusers_;    // other members that saw a refusal, at most kMaxRefusers
  bool self_refused_ = false;
  bool answered_ = false;
};

}  // namespace shoal::gossip

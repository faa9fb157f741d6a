// Eviction by agreement (opt-in, `--evict-stragglers`): when this member's straggler verdict (node health,
// measured on the job's own steps and identical on every rank of the view) has named a member of the
// committed view continuously for `after`, the keeper leaves that member out of the view it wants next, and
// the majority path commits it like any other change. A pure rule with time as an argument:
//   - only a verdict about the committed epoch counts, and only while fresh (a report at most kVerdictMaxAge
//     old): figures of an older view, or a trainer that stopped reporting, evict nobody;
//   - a report that no longer names the member cancels it (the continuous time starts again);
//   - at most one member per `window`, counted from the last view that evicted someone (every member
//     counts it at install, so a proposer that takes over keeps the pace);
//   - after a round that evicted failed (acceptors disagreed, or a peer was unreachable), no eviction for
//     `after` again;
//   - the acceptor's side: a value that evicts a member is promised and accepted only by a member whose own
//     verdict named it at some report of its committed epoch (monotone within the epoch, so a value once
//     accepted stays acceptable to those who accepted it, and a re-proposal of it never livelocks);
//   - never below --min-hosts: desired_view drops the eviction when the rest would be too few.
// The evicted member stays alive out of views; the flap damper readmits it after `hold_down`, whatever its
// generation (a restart does not skip it).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gossip/types.hpp"
#include "membership/view.hpp"

namespace shoal::membership {

using gossip::Time;

struct EvictionConfig {
  bool enabled = false;
  Time after{3'000'000};       // named continuously this long before it is evicted
  Time window{60'000'000};     // at most one eviction per window
  Time hold_down{60'000'000};  // an evicted member is readmitted only after this long alive out of the view
};

// A verdict report older than this evicts nobody (a trainer that stopped reporting is no evidence).
inline constexpr Time kVerdictMaxAge{30'000'000};

class Eviction {
 public:
  explicit Eviction(EvictionConfig cfg = {}) : cfg_(cfg) {}

  const EvictionConfig& config() const { return cfg_; }
  bool enabled() const { return cfg_.enabled; }

  // The local trainer's verdict: the members it names (`named`), measured in `epoch` up to `step`. Counted
  // only when `epoch` is the committed view's epoch (`committed_epoch`).
  void on_verdict(uint64_t epoch, const std::vector<std::string>& named, uint64_t step, uint64_t committed_epoch,
                  Time now);
  // A view was installed: the verdict of the old one is forgotten; one that evicts starts a window.
  void on_install(const View& installed, Time now);
  // A round whose value evicted someone failed.
  void round_failed(Time now);

  // The member of `view` to evict now, if any (the one named longest; ties by name).
  std::optional<std::string> candidate(const View& view, Time now) const;
  // When candidate() may next change while nothing else happens (for the keeper's wake-up).
  std::optional<Time> next_due(const View& view, Time now) const;
  // The acceptor's check: this member's verdict named every one of `names` in the committed epoch.
  bool agrees(const std::vector<std::string>& names) const;

  // For status and logs: since when and from which step the verdict names `name` (nullopt: not named now).
  struct Named {
    Time since{0};
    uint64_t step = 0;
  };
  std::optional<Named> named(const std::string& name) const;
  // The step at which the verdict first named `name` in the committed epoch (0 when it never did).
  uint64_t first_named_step(const std::string& name) const;

 private:
  EvictionConfig cfg_;
  uint64_t epoch_ = 0;                      // the committed epoch the verdict below is about
  std::map<std::string, Named> named_;      // named by the latest report, since when (continuously)
  std::map<std::string, uint64_t> ever_;    // named at some report of epoch_: the first step
  std::optional<Time> last_report_;
  std::optional<Time> last_eviction_;       // install time of the last view that evicted someone
  Time quiet_until_{0};                     // after a failed round
};

}  // namespace shoal::membership

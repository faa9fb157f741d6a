// Flap damping: a member removed from a committed view is readmitted only after it has stayed alive
// for the hold-down period, so a host with a bad link costs one removal, not a rebuild every few
// seconds. A host's failures are counted across generations: a restart (a newer generation) after its
// first failure is admitted at once (a one-off crash costs what it costs today, and a quick restart can
// replace its old self in one view), but a host that keeps failing is held down longer each time (the
// hold-down doubles per failure up to a cap, see hold_down_for), so a bad GPU whose agent systemd restarts
// after every crash cannot flap a job all day. A graceful leave is not a failure.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>
#include <string>
#include <vector>

#include "gossip/types.hpp"

namespace shoal::membership {

using gossip::Time;

// How the hold-down grows for a host that keeps failing (Config: hold_down, hold_down_max, failures_forgotten).
struct Escalation {
  Time max{600'000'000};          // the hold-down never exceeds this (nor the base, if the base is longer)
  Time forgotten{3'600'000'000};  // failures further apart than this start the count again
};

// The hold-down before a host is readmitted after its `failures`-th failure in a row (the one just counted
// included, so at least 1): for the same process (a flap) base x 2^(failures-1); for a restarted process
// (a newer generation) 0 after the first failure, then base x 2^(failures-2). Never above max(base, cap).
Time hold_down_for(uint32_t failures, bool restarted, Time base, Time cap);

class FlapDamper {
 public:
  explicit FlapDamper(Escalation escalation = {}) : escalation_(escalation) {}

  // Feeds gossip's current opinion: tracks since when each member has been continuously alive.
  void observe(const std::vector<gossip::Member>& members, Time now);
  // Records that `name` (at `generation`) left a committed view at `now`. An eviction (node health) passes
  // its own hold-down, which applies to every generation: restarting a slow host does not readmit it sooner.
  // `failure`: it was removed dead, suspected or evicted (counted); false for a graceful leave (not counted).
  void removed(const std::string& name, uint64_t generation, Time now, std::optional<Time> evicted_hold = {},
               bool failure = true);
  // The operator readmitted `name` (`shoal view readmit`): its removal and failure count are forgotten, so it
  // may join at once.
  void readmit(const std::string& name);
  // The host's failures counted in a row (none further apart than Escalation::forgotten); 0 if none.
  uint32_t failures(const std::string& name) const;
  // The end of an evicted member's hold-down, counted from its removal (nullopt: not held as evicted).
  std::optional<Time> evicted_until(const std::string& name) const;

  // Whether this member may be admitted now, and if not, from when (for the wake-up). `replacing`: an older
  // process of the same host is still in the committed view (this one would replace it in place).
  bool eligible(const std::string& name, uint64_t generation, Time now, Time hold_down, bool replacing = false) const;
  Time eligible_at(const std::string& name, uint64_t generation, Time hold_down, bool replacing = false) const;
  // Since when gossip has seen this member alive without interruption (nullopt: not alive now).
  std::optional<Time> alive_since(const std::string& name, uint64_t generation) const;
  // Both at once, for a joiner (one lookup of each table): since when it is alive, and from when it may
  // be admitted (Time::max(): not alive).
  struct Admission {
    std::optional<Time> since;
    Time eligible_at = Time::max();
  };
  Admission admission(const std::string& name, uint64_t generation, Time hold_down, bool replacing = false) const;

 private:
  struct Alive {
    uint64_t generation = 0;
    Time since{0};
    uint64_t seen_in = 0;  // the observe() call that last saw it alive
  };
  struct Removal {
    uint64_t generation = 0;
    Time at{0};
    std::optional<Time> evicted_hold;  // set for an eviction: this hold-down, any generation
    uint32_t failures = 0;             // failures in a row, this one included (0: it left gracefully)
  };
  struct Failures {
    uint32_t count = 0;
    Time last{0};
  };
  // eligible_at for a member alive since `since`.
  Time eligible_from(const std::string& name, uint64_t generation, Time since, Time hold_down, bool replacing) const;
  // Updated in place at every gossip change (hashed, no rebuild): this runs on every member for every
  // change, which at a thousand members made a rebuilt ordered map the keeper's main cost.
  std::unordered_map<std::string, Alive> alive_;
  uint64_t observations_ = 0;
  std::map<std::string, Removal> removed_;
  std::map<std::string, Failures> failures_;  // per host name, across generations
  Escalation escalation_;
};

}  // namespace shoal::membership

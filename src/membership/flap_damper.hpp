// Flap damping: a member removed from a committed view is readmitted only after it has stayed alive
// for the hold-down period, so a host with a bad link costs one removal, not a rebuild every few
// seconds. A restart (a newer generation) is a new process, not a flap: it is admitted at once.
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

class FlapDamper {
 public:
  // Feeds gossip's current opinion: tracks since when each member has been continuously alive.
  void observe(const std::vector<gossip::Member>& members, Time now);
  // Records that `name` (at `generation`) left a committed view at `now`. An eviction (node health) passes
  // its own hold-down, which applies to every generation: restarting a slow host does not readmit it sooner.
  void removed(const std::string& name, uint64_t generation, Time now, std::optional<Time> evicted_hold = {});
  // The end of an evicted member's hold-down, counted from its removal (nullopt: not held as evicted).
  std::optional<Time> evicted_until(const std::string& name) const;

  // Whether this member may be admitted now, and if not, from when (for the wake-up).
  bool eligible(const std::string& name, uint64_t generation, Time now, Time hold_down) const;
  Time eligible_at(const std::string& name, uint64_t generation, Time hold_down) const;
  // Since when gossip has seen this member alive without interruption (nullopt: not alive now).
  std::optional<Time> alive_since(const std::string& name, uint64_t generation) const;

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
  };
  // Updated in place at every gossip change (hashed, no rebuild): this runs on every member for every
  // change, which at a thousand members made a rebuilt ordered map the keeper's main cost.
  std::unordered_map<std::string, Alive> alive_;
  uint64_t observations_ = 0;
  std::map<std::string, Removal> removed_;
};

}  // namespace shoal::membership

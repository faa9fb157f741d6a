// Alive-run tracking and hold-down arithmetic for readmission.
#include "membership/flap_damper.hpp"

#include <algorithm>

namespace shoal::membership {

void FlapDamper::observe(const std::vector<gossip::Member>& members, Time now) {
  const uint64_t mark = ++observations_;
  for (const auto& m : members) {
    if (m.state != gossip::State::alive) continue;
    auto [it, inserted] = alive_.try_emplace(m.id.name, Alive{m.id.generation, now, mark});
    if (!inserted && it->second.generation != m.id.generation) it->second = Alive{m.id.generation, now, mark};
    it->second.seen_in = mark;
  }
  std::erase_if(alive_, [mark](const auto& entry) { return entry.second.seen_in != mark; });
}

void FlapDamper::removed(const std::string& name, uint64_t generation, Time now, std::optional<Time> evicted_hold) {
  removed_[name] = Removal{generation, now, evicted_hold};
}

std::optional<Time> FlapDamper::evicted_until(const std::string& name) const {
  const auto r = removed_.find(name);
  if (r == removed_.end() || !r->second.evicted_hold) return std::nullopt;
  return r->second.at + *r->second.evicted_hold;
}

std::optional<Time> FlapDamper::alive_since(const std::string& name, uint64_t generation) const {
  const auto it = alive_.find(name);
  if (it == alive_.end() || it->second.generation != generation) return std::nullopt;
  return it->second.since;
}

Time FlapDamper::eligible_at(const std::string& name, uint64_t generation, Time hold_down) const {
  const auto since = alive_since(name, generation);
  if (!since) return Time::max();
  const auto r = removed_.find(name);
  if (r == removed_.end()) return *since;
  if (r->second.evicted_hold) {
    // An evicted member waits out the longer of both hold-downs, whatever its generation.
    return std::max(*since, r->second.at) + std::max(hold_down, *r->second.evicted_hold);
  }
  if (generation > r->second.generation) return *since;
  return std::max(*since, r->second.at) + hold_down;
}

bool FlapDamper::eligible(const std::string& name, uint64_t generation, Time now, Time hold_down) const {
  return eligible_at(name, generation, hold_down) <= now;
}

}  // namespace shoal::membership

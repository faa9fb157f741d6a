// Alive-run tracking and hold-down arithmetic for readmission.
#include "membership/flap_damper.hpp"

#include <algorithm>

namespace shoal::membership {

void FlapDamper::observe(const std::vector<gossip::Member>& members, Time now) {
  std::map<std::string, Alive> next;
  for (const auto& m : members) {
    if (m.state != gossip::State::alive) continue;
    const auto it = alive_.find(m.id.name);
    if (it != alive_.end() && it->second.generation == m.id.generation) {
      next.emplace(m.id.name, it->second);
    } else {
      next.emplace(m.id.name, Alive{m.id.generation, now});
    }
  }
  alive_ = std::move(next);
}

void FlapDamper::removed(const std::string& name, uint64_t generation, Time now) {
  removed_[name] = Removal{generation, now};
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
  if (r == removed_.end() || generation > r->second.generation) return *since;
  return std::max(*since, r->second.at) + hold_down;
}

bool FlapDamper::eligible(const std::string& name, uint64_t generation, Time now, Time hold_down) const {
  return eligible_at(name, generation, hold_down) <= now;
}

}  // namespace shoal::membership

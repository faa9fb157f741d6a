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

Time hold_down_for(uint32_t failures, bool restarted, Time base, Time cap) {
  if (restarted && failures <= 1) return Time{0};
  const uint32_t doublings = failures == 0 ? 0 : failures - (restarted ? 2 : 1);
  const Time limit = std::max(base, cap);
  Time hold = base;
  for (uint32_t i = 0; i < doublings && hold < limit; ++i) hold *= 2;  // stops at the cap: never overflows
  return std::min(hold, limit);
}

void FlapDamper::removed(const std::string& name, uint64_t generation, Time now, std::optional<Time> evicted_hold,
                         bool failure) {
  uint32_t count = 0;
  if (failure) {
    auto& f = failures_[name];
    if (f.count != 0 && now - f.last > escalation_.forgotten) f.count = 0;
    f.count = f.count < 1000 ? f.count + 1 : f.count;
    f.last = now;
    count = f.count;
  }
  removed_[name] = Removal{generation, now, evicted_hold, count};
}

void FlapDamper::readmit(const std::string& name) {
  removed_.erase(name);
  failures_.erase(name);
}

uint32_t FlapDamper::failures(const std::string& name) const {
  const auto f = failures_.find(name);
  return f == failures_.end() ? 0 : f->second.count;
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

Time FlapDamper::eligible_at(const std::string& name, uint64_t generation, Time hold_down, bool replacing) const {
  return admission(name, generation, hold_down, replacing).eligible_at;
}

FlapDamper::Admission FlapDamper::admission(const std::string& name, uint64_t generation, Time hold_down,
                                            bool replacing) const {
  const auto since = alive_since(name, generation);
  return {since, since ? eligible_from(name, generation, *since, hold_down, replacing) : Time::max()};
}

Time FlapDamper::eligible_from(const std::string& name, uint64_t generation, Time since, Time hold_down,
                               bool replacing) const {
  if (replacing) {
    // A newer process of a host whose older one is still in the view: the old one's failure is counted only
    // once a view without it commits, so count it here, or every second crash would replace in place too.
    const auto f = failures_.find(name);
    const bool recent = f != failures_.end() && f->second.count != 0 && since - f->second.last <= escalation_.forgotten;
    const Time hold = hold_down_for((recent ? f->second.count : 0) + 1, true, hold_down, escalation_.max);
    return since + hold;
  }
  const auto r = removed_.find(name);
  if (r == removed_.end()) return since;
  if (r->second.evicted_hold) {
    // An evicted member waits out the longer of both hold-downs, whatever its generation.
    const Time hold = hold_down_for(std::max<uint32_t>(r->second.failures, 1), false, hold_down, escalation_.max);
    return std::max(since, r->second.at) + std::max(hold, *r->second.evicted_hold);
  }
  const bool restarted = generation > r->second.generation;
  if (r->second.failures == 0) {  // it left gracefully: today's rule (a new process at once)
    return restarted ? since : std::max(since, r->second.at) + hold_down;
  }
  const Time hold = hold_down_for(r->second.failures, restarted, hold_down, escalation_.max);
  if (hold == Time{0}) return since;
  return std::max(since, r->second.at) + hold;
}

bool FlapDamper::eligible(const std::string& name, uint64_t generation, Time now, Time hold_down,
                          bool replacing) const {
  return eligible_at(name, generation, hold_down, replacing) <= now;
}

}  // namespace shoal::membership

// The wanted next member list: who stays, who goes, who may join, and what blocks a change.
#include "membership/desired_view.hpp"

#include <algorithm>
#include <map>
#include <string_view>
#include <unordered_map>

#include "membership/join_window.hpp"

namespace shoal::membership {
namespace {

ViewMember from_gossip(const gossip::Member& m, uint64_t join_epoch) {
  ViewMember v;
  v.name = m.id.name;
  v.host = m.meta.host.empty() ? m.id.name : m.meta.host;
  v.addr = m.id.addr;
  v.slots = m.meta.slots;
  v.join_epoch = join_epoch;
  v.generation = m.id.generation;
  return v;
}

bool live(gossip::State s) { return s == gossip::State::alive || s == gossip::State::suspect; }

std::string names_of(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < 8; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > 8) out += ", ... (" + std::to_string(names.size()) + ")";
  return out;
}

}  // namespace

std::vector<gossip::Member> vouched_by(const View& committed) {
  std::vector<gossip::Member> out;
  out.reserve(committed.members().size());
  for (const ViewMember& vm : committed.members()) {
    if (vm.join_epoch != committed.epoch()) continue;
    gossip::Member m;
    m.id = gossip::Identity{vm.name, vm.generation, vm.addr};
    m.meta.host = vm.host;
    m.meta.slots = vm.slots;
    out.push_back(std::move(m));
  }
  return out;
}

bool same_members(std::vector<ViewMember> a, std::vector<ViewMember> b) {
  if (a.size() != b.size()) return false;
  auto by_name = [](const ViewMember& x, const ViewMember& y) { return x.name < y.name; };
  std::sort(a.begin(), a.end(), by_name);
  std::sort(b.begin(), b.end(), by_name);
  return a == b;
}

Desired desired_view(const View& committed, const std::vector<gossip::Member>& gossip, const FlapDamper& damper,
                     const Config& cfg, Time now, const std::optional<std::string>& evict,
                     std::optional<Time> installed_at) {
  Desired d;
  const uint64_t next_epoch = committed.epoch() + 1;
  // Hashed by name: this runs at every gossip change on every member, so at a thousand members an
  // ordered map's string comparisons dominated the keeper's time.
  std::unordered_map<std::string_view, const gossip::Member*> seen;
  seen.reserve(gossip.size());
  for (const auto& m : gossip) seen[m.id.name] = &m;

  bool only_graceful = true;
  bool only_known_gone = true;  // left, or dead on a confirmed refusal
  size_t lingering = 0;  // left gracefully, recently: still answers as an acceptor
  bool stays_changed = false;  // a member of the view stays with new metadata
  std::vector<std::string> live_names, lost_names;
  std::optional<ViewMember> evicted;  // live, left out as a straggler
  for (const ViewMember& vm : committed.members()) {
    const auto it = seen.find(vm.name);
    const gossip::Member* g = it == seen.end() ? nullptr : it->second;
    if (g != nullptr && g->id.generation == vm.generation && live(g->state)) {
      ViewMember keep = from_gossip(*g, vm.join_epoch);
      if (evict && vm.name == *evict) {
        // Alive, so it still counts as live for the majority; it simply is not wanted in the next view.
        evicted = keep;
        live_names.push_back(vm.name);
        continue;
      }
      d.members.push_back(keep);
      live_names.push_back(vm.name);
      if (!(keep == vm)) only_graceful = only_known_gone = false, stays_changed = true;  // metadata changed
    } else {
      lost_names.push_back(vm.name);
      const bool left = g != nullptr && g->id.generation == vm.generation && g->state == gossip::State::left;
      const bool refused =
          g != nullptr && g->id.generation == vm.generation && g->state == gossip::State::dead && g->refused;
      if (!left) only_graceful = false;
      if (!left && !refused) only_known_gone = false;
      if (left && now - g->state_since < cfg.leaver_votes_for) ++lingering;
    }
  }
  d.live_of_view = live_names.size();

  // Joiners: alive, not in the view at this generation, past their hold-down; oldest alive first.
  struct Joiner {
    Time since;
    const gossip::Member* m;
  };
  std::vector<Joiner> joiners;
  for (const auto& m : gossip) {
    if (m.state != gossip::State::alive) continue;
    const ViewMember* in_view = committed.find(m.id.name);
    if (in_view != nullptr && in_view->generation == m.id.generation) continue;
    const bool replacing = in_view != nullptr;  // an older process of this host is in the view
    if (!damper.eligible(m.id.name, m.id.generation, now, cfg.hold_down, replacing)) {
      const Time at = damper.eligible_at(m.id.name, m.id.generation, cfg.hold_down, replacing);
      if (at != Time::max() && (!d.next_eligible || at < *d.next_eligible)) d.next_eligible = at;
      continue;
    }
    joiners.push_back({damper.alive_since(m.id.name, m.id.generation).value_or(now), &m});
  }
  std::sort(joiners.begin(), joiners.end(), [](const Joiner& a, const Joiner& b) {
    return a.since != b.since ? a.since < b.since : a.m->id.name < b.m->id.name;
  });
  // In a large view, joiners alone wait for the join window; with any other change they go at once.
  const bool other_change = stays_changed || !lost_names.empty() || evicted.has_value();
  const JoinGate gate = joiners.empty() ? JoinGate{}
                                        : join_gate(committed.size(), committed.epoch(), other_change, installed_at,
                                                    now, cfg.join_window, cfg.join_window_from);
  if (!gate.admit) {
    d.joins_held = joiners.size();
    d.joins_open_at = gate.opens_at;
    if (!d.next_eligible || *gate.opens_at < *d.next_eligible) d.next_eligible = gate.opens_at;
    joiners.clear();
  }
  for (const Joiner& j : joiners) {
    if (cfg.max_hosts != 0 && d.members.size() >= cfg.max_hosts) break;
    d.members.push_back(from_gossip(*j.m, next_epoch));
    only_graceful = only_known_gone = false;
  }

  if (evicted) {
    if (d.members.size() < std::max<uint32_t>(cfg.min_hosts, 1)) {
      d.evict_blocked = "not evicting " + evicted->name + ": the view would have " + std::to_string(d.members.size()) +
                        " members, fewer than --min-hosts " + std::to_string(cfg.min_hosts);
      d.members.push_back(*evicted);
    } else {
      d.evicted = evicted->name;
      only_graceful = only_known_gone = false;
    }
  }
  d.differs = !same_members(d.members, committed.members());
  d.graceful_only = d.differs && only_graceful;
  d.refused_only = d.differs && !only_graceful && only_known_gone;
  d.majority_live = committed.size() == 0 || (live_names.size() + lingering) * 2 > committed.size();
  if (!d.differs) return d;

  if (committed.epoch() == 0 && cfg.joining && d.members.size() < 2) {
    d.blocked = "joining: no other member is alive; a host started with seeds never forms a cluster alone";
  } else if (d.members.size() < std::max<uint32_t>(cfg.min_hosts, 1)) {
    d.blocked = committed.epoch() == 0
                    ? "forming: " + std::to_string(d.members.size()) + " of --min-hosts " +
                          std::to_string(cfg.min_hosts) + " members alive"
                    : "below --min-hosts: the next view would have " + std::to_string(d.members.size()) +
                          " members, fewer than " + std::to_string(cfg.min_hosts);
  } else if (!d.majority_live && cfg.policy == QuorumPolicy::majority) {
    d.blocked = "majority lost: " + std::to_string(live_names.size()) + " of " + std::to_string(committed.size()) +
                " members of epoch " + std::to_string(committed.epoch()) + " alive (" + names_of(live_names) +
                "); lost: " + names_of(lost_names) + "; need " + std::to_string(committed.size() / 2 + 1) +
                ". `shoal view force` overrides (risk: split brain if the others are alive)";
  }
  return d;
}

}  // namespace shoal::membership

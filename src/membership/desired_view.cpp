// The wanted next member list: who stays, who goes, who may join, and what blocks a change.
#include "membership/desired_view.hpp"

#include <algorithm>
#include <array>
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

// from_gossip(g, vm.join_epoch) == vm, for a record of vm's name and generation, without building it.
bool same_fields(const gossip::Member& g, const ViewMember& vm) {
  const std::string& host = g.meta.host.empty() ? g.id.name : g.meta.host;
  return host == vm.host && g.id.addr == vm.addr && g.meta.slots == vm.slots;
}

// A count of names and the first few of them, for a message (no copy of every name).
struct Names {
  static constexpr size_t kShown = 8;
  size_t count = 0;
  std::array<std::string_view, kShown> first{};
  void add(std::string_view name) {
    if (count < kShown) first[count] = name;
    ++count;
  }
};

std::string names_of(const Names& names) {
  std::string out;
  for (size_t i = 0; i < names.count && i < Names::kShown; ++i) out += (i ? ", " : "") + std::string(names.first[i]);
  if (names.count > Names::kShown) out += ", ... (" + std::to_string(names.count) + ")";
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

uint64_t members_fingerprint(const std::vector<ViewMember>& members) {
  uint64_t sum = 0;
  for (const ViewMember& m : members) {
    uint64_t h = fnv1a64(m.name);
    const auto mix = [&h](uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
    mix(fnv1a64(m.host));
    mix(fnv1a64(m.addr));
    mix(m.slots);
    mix(m.join_epoch);
    mix(m.generation);
    // A final avalanche (splitmix64's), so that a sum of related members does not cancel out.
    h ^= h >> 30, h *= 0xbf58476d1ce4e5b9ULL, h ^= h >> 27, h *= 0x94d049bb133111ebULL, h ^= h >> 31;
    sum += h;
  }
  return sum ^ members.size();
}

Desired desired_view(const View& committed, const std::vector<gossip::Member>& gossip, const FlapDamper& damper,
                     const Config& cfg, Time now, const std::optional<std::string>& evict,
                     std::optional<Time> installed_at, const GossipIndex* index,
                     const std::vector<std::string>* excluded) {
  Desired d;
  const std::vector<std::string>& out_list = excluded != nullptr ? *excluded : committed.excluded();
  const bool list_changed = excluded != nullptr && *excluded != committed.excluded();
  const auto is_excluded = [&out_list](std::string_view name) {
    return !out_list.empty() && std::binary_search(out_list.begin(), out_list.end(), name, std::less<>());
  };
  const uint64_t next_epoch = committed.epoch() + 1;
  // Hashed by name: this runs at every gossip change on every member, so at a thousand members an
  // ordered map's string comparisons dominated the keeper's time. The wanted list is only built when it
  // differs from the view: most calls decide "no change" from pointers and counts, without copying a name.
  GossipIndex own;
  if (index == nullptr) {
    own.reserve(gossip.size());
    for (size_t i = 0; i < gossip.size(); ++i) own[gossip[i].id.name] = i;
    index = &own;
  }
  // Per gossip record: kNotInView, kOlderInView (an older process of its host is in the view) or kInView.
  enum : uint8_t { kNotInView, kOlderInView, kInView };
  std::vector<uint8_t> place(gossip.size(), kNotInView);

  bool only_graceful = true;
  bool only_known_gone = true;  // left, or dead on a confirmed refusal
  bool stays_changed = false;   // a member of the view stays with new metadata
  size_t lingering = 0;         // left gracefully, recently: still answers as an acceptor
  struct Stay {
    const ViewMember* vm;
    const gossip::Member* g;
  };
  std::vector<Stay> stays;
  stays.reserve(committed.size());
  Names live_names, lost_names;
  std::optional<Stay> evicted;  // live, left out as a straggler
  for (const ViewMember& vm : committed.members()) {
    const auto it = index->find(vm.name);
    const gossip::Member* g = it == index->end() ? nullptr : &gossip[it->second];
    if (g != nullptr) place[it->second] = g->id.generation == vm.generation ? kInView : kOlderInView;
    if (g != nullptr && g->id.generation == vm.generation && live(g->state)) {
      live_names.add(vm.name);
      if (is_excluded(vm.name)) {  // the operator keeps it out: alive, so it still counts for the majority
        ++d.excluding;
        continue;
      }
      if (evict && vm.name == *evict) {
        // Alive, so it still counts as live for the majority; it simply is not wanted in the next view.
        evicted = Stay{&vm, g};
        continue;
      }
      stays.push_back({&vm, g});
      if (!same_fields(*g, vm)) only_graceful = only_known_gone = false, stays_changed = true;  // metadata changed
    } else {
      lost_names.add(vm.name);
      const bool left = g != nullptr && g->id.generation == vm.generation && g->state == gossip::State::left;
      const bool refused =
          g != nullptr && g->id.generation == vm.generation && g->state == gossip::State::dead && g->refused;
      if (!left) only_graceful = false;
      if (!left && !refused) only_known_gone = false;
      if (left && now - g->state_since < cfg.leaver_votes_for) ++lingering;
    }
  }
  d.live_of_view = live_names.count;

  // Joiners: alive, not in the view at this generation, past their hold-down; oldest alive first.
  struct Joiner {
    Time since;
    const gossip::Member* m;
  };
  std::vector<Joiner> joiners;
  for (size_t i = 0; i < gossip.size(); ++i) {
    const gossip::Member& m = gossip[i];
    if (m.state != gossip::State::alive || place[i] == kInView) continue;
    if (is_excluded(m.id.name)) {
      ++d.excluded_held;
      continue;
    }
    const bool replacing = place[i] == kOlderInView;  // an older process of this host is in the view
    const FlapDamper::Admission a = damper.admission(m.id.name, m.id.generation, cfg.hold_down, replacing);
    if (a.eligible_at > now) {
      if (a.eligible_at != Time::max() && (!d.next_eligible || a.eligible_at < *d.next_eligible)) {
        d.next_eligible = a.eligible_at;
      }
      continue;
    }
    joiners.push_back({a.since.value_or(now), &m});
  }
  std::sort(joiners.begin(), joiners.end(), [](const Joiner& a, const Joiner& b) {
    return a.since != b.since ? a.since < b.since : a.m->id.name < b.m->id.name;
  });
  // In a large view, joiners alone wait for the join window; with any other change they go at once.
  const bool other_change =
      stays_changed || lost_names.count > 0 || evicted.has_value() || d.excluding > 0 || list_changed;
  const JoinGate gate = joiners.empty() ? JoinGate{}
                                        : join_gate(committed.size(), committed.epoch(), other_change, installed_at,
                                                    now, cfg.join_window, cfg.join_window_from);
  if (!gate.admit) {
    d.joins_held = joiners.size();
    d.joins_open_at = gate.opens_at;
    if (!d.next_eligible || *gate.opens_at < *d.next_eligible) d.next_eligible = gate.opens_at;
    joiners.clear();
  }
  if (cfg.max_hosts != 0) {
    joiners.resize(std::min(joiners.size(), cfg.max_hosts > stays.size() ? cfg.max_hosts - stays.size() : size_t{0}));
  }
  if (!joiners.empty() || d.excluding > 0 || list_changed) only_graceful = only_known_gone = false;

  bool evicting = false;
  if (evicted) {
    const size_t without = stays.size() + joiners.size();
    if (without < std::max<uint32_t>(cfg.min_hosts, 1)) {
      d.evict_blocked = "not evicting " + evicted->vm->name + ": the view would have " + std::to_string(without) +
                        " members, fewer than --min-hosts " + std::to_string(cfg.min_hosts);
      stays.push_back(*evicted);
      if (!same_fields(*evicted->g, *evicted->vm)) only_graceful = only_known_gone = false, stays_changed = true;
    } else {
      d.evicted = evicted->vm->name;
      evicting = true;
      only_graceful = only_known_gone = false;
    }
  }
  d.differs = stays_changed || lost_names.count > 0 || evicting || !joiners.empty() || d.excluding > 0 || list_changed;
  d.graceful_only = d.differs && only_graceful;
  d.refused_only = d.differs && !only_graceful && only_known_gone;
  d.majority_live = committed.size() == 0 || (live_names.count + lingering) * 2 > committed.size();
  if (!d.differs) return d;
  d.excluded = out_list;
  d.members.reserve(stays.size() + joiners.size());
  for (const Stay& st : stays) d.members.push_back(from_gossip(*st.g, st.vm->join_epoch));
  for (const Joiner& j : joiners) d.members.push_back(from_gossip(*j.m, next_epoch));

  if (committed.epoch() == 0 && cfg.joining && d.members.size() < 2) {
    d.blocked = "joining: no other member is alive; a host started with seeds never forms a cluster alone";
  } else if (d.members.size() < std::max<uint32_t>(cfg.min_hosts, 1)) {
    d.blocked = committed.epoch() == 0
                    ? "forming: " + std::to_string(d.members.size()) + " of --min-hosts " +
                          std::to_string(cfg.min_hosts) + " members alive"
                    : "below --min-hosts: the next view would have " + std::to_string(d.members.size()) +
                          " members, fewer than " + std::to_string(cfg.min_hosts);
  } else if (!d.majority_live && cfg.policy == QuorumPolicy::majority) {
    d.blocked = "majority lost: " + std::to_string(live_names.count) + " of " + std::to_string(committed.size()) +
                " members of epoch " + std::to_string(committed.epoch()) + " alive (" + names_of(live_names) +
                "); lost: " + names_of(lost_names) + "; need " + std::to_string(committed.size() / 2 + 1) +
                ". `shoal view force` overrides (risk: split brain if the others are alive)";
  }
  return d;
}

}  // namespace shoal::membership

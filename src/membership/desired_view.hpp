// What the next view should hold, as a pure function of the committed view, gossip's opinion, the
// flap damper and the configuration — and, when no change may be made, why.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "membership/config.hpp"
#include "membership/flap_damper.hpp"
#include "membership/view.hpp"

namespace shoal::membership {

// Gossip's records by name: the index of each name's one record in the member list.
using GossipIndex = std::unordered_map<std::string_view, size_t>;

struct Desired {
  std::vector<ViewMember> members;  // the wanted member list (join_epoch already set), unordered; only when differs
  bool differs = false;             // the wanted list is not the committed view's list
  bool graceful_only = false;       // the only changes are members that left gracefully: no settle wait
  // The only changes are members that left or were declared dead on a confirmed refusal (and at least one
  // such death): Config::settle_refused applies.
  bool refused_only = false;
  bool majority_live = true;        // a majority of the committed view is alive or suspect
  size_t live_of_view = 0;
  std::string blocked;              // non-empty: a change is wanted but may not be proposed (the reason)
  std::optional<Time> next_eligible;  // when a member in hold-down becomes admissible
  std::optional<std::string> evicted;  // the member this list leaves out as a straggler
  std::string evict_blocked;           // non-empty: an eviction was asked for but not made (the reason)
  // Joiners eligible but held for the join window (join_window.hpp), and when it opens (also in
  // next_eligible, so that the keeper looks again then).
  size_t joins_held = 0;
  std::optional<Time> joins_open_at;
  // The operator's exclusions (exclusion.hpp): the excluded list the next view carries (only when differs),
  // how many live members of the view it leaves out, and how many live hosts out of the view it keeps out.
  std::vector<std::string> excluded;
  size_t excluding = 0;
  size_t excluded_held = 0;
};

// Members of `committed` stay while gossip sees the same generation alive or suspect; dead, left,
// restarted or forgotten members go. Alive members not in the view join when the flap damper allows,
// up to max_hosts, and in a large view only in windows (join_window.hpp: `installed_at` is when this
// member installed `committed`; nullopt: no window). `evict` (eviction.hpp) names a live member of the
// view to leave out as a straggler; it stays in when the list would fall below min_hosts without it
// (evict_blocked says so). `index`: `gossip` by name, when the caller keeps one (built here otherwise).
// `excluded`: the excluded list the next view is to carry, sorted (nullptr: the committed view's): its names
// leave the view while alive (still counted live for the majority) and never join; a list other than the
// committed one is a change by itself.
Desired desired_view(const View& committed, const std::vector<gossip::Member>& gossip, const FlapDamper& damper,
                     const Config& cfg, Time now, const std::optional<std::string>& evict = std::nullopt,
                     std::optional<Time> installed_at = std::nullopt, const GossipIndex* index = nullptr,
                     const std::vector<std::string>* excluded = nullptr);

// The members that joined in a committed view (join_epoch == its epoch), as gossip records (alive,
// incarnation 0, the view's metadata): what gossip::Swim::vouch takes, so that a member that has not
// heard of a joiner yet (its news travels from the member it joined through, which may die right after
// proposing the view) keeps it in its next view instead of removing a live member. Members of earlier
// views are left to gossip alone: a member long dead and forgotten is never brought back this way.
std::vector<gossip::Member> vouched_by(const View& committed);

// A 64-bit digest of a member list, order ignored (a sum of per-member hashes over every field): equal
// lists give equal values; the keeper compares wanted lists by it instead of sorting copies of both.
uint64_t members_fingerprint(const std::vector<ViewMember>& members);

}  // namespace shoal::membership

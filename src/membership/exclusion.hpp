// The operator's exclusions: hosts kept out of every view until readmitted (`shoal view exclude NAME`,
// `shoal view readmit NAME`, and --precheck-exclude for the hosts the first view's check flags). The list is
// part of the committed view (View::excluded), so every member agrees on it and none proposes an excluded host
// back; it changes only by a view change, agreed by a majority like any other. Pure rules:
//   - a word names a member (of the view or known to gossip) by its name, or every such member on a host by
//     the host's name; a word that names nothing is refused with its text;
//   - an exclusion that would leave fewer than a majority of the committed view's members in it, or fewer
//     than --min-hosts, is refused (naming the counts): excluding is for a bad host or a rack, not for the
//     job's majority;
//   - readmitting a name that is not excluded is refused (naming the excluded ones).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "gossip/types.hpp"
#include "membership/view.hpp"

namespace shoal::membership {

// The member names `words` mean (sorted, unique), resolved against the committed view and gossip's list.
Result<std::vector<std::string>> resolve_members(const View& view, const std::vector<gossip::Member>& gossip,
                                                 const std::vector<std::string>& words);

// `current` plus `add` minus `drop`, sorted and unique.
std::vector<std::string> next_excluded(const std::vector<std::string>& current, const std::set<std::string>& add,
                                       const std::set<std::string>& drop);

// Whether the next view may carry `excluded` (sorted): the members of `view` it leaves in must be a majority of
// `view` and at least `min_hosts`, and the list at most kMaxViewExcluded long.
Status check_exclusion(const View& view, const std::vector<std::string>& excluded, uint32_t min_hosts);

// Whether `drop` may be readmitted: every name is on `excluded` (the committed list plus pending additions).
Status check_readmit(const std::vector<std::string>& excluded, const std::vector<std::string>& drop);

// --precheck-exclude: of the members the first view's check flagged, the ones to exclude. All the flagged
// members of `view` when excluding them all passes check_exclusion (with the view's own list); none otherwise,
// and `refused` says why (the job then starts with them, as --precheck alone would).
struct PrecheckExclusion {
  std::vector<std::string> names;
  std::string refused;
};
PrecheckExclusion precheck_exclusion(const View& view, const std::vector<std::string>& flagged, uint32_t min_hosts);

}  // namespace shoal::membership

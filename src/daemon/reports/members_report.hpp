// The reply to the control request `members`: this member's view of the cluster and the inputs it
// refused, as one JSON document:
//   {"self": NAME, "members": [{"name", "addr", "state", "incarnation", "generation"}...],
//    "rejected": {cause: count, ...}}
#pragma once

#include <string>
#include <vector>

#include "gossip/types.hpp"
#include "wire/reject.hpp"

namespace shoal::daemon {

// Members are listed by name; "rejected" sums the core's and the shell's counters and names every
// cause, zeros included, so that readers see a stable set of keys.
std::string members_json(const std::string& self, std::vector<gossip::Member> members,
                         const wire::RejectCounters& core_rejects, const wire::RejectCounters& shell_rejects);

}  // namespace shoal::daemon

// The reply to the control request `members`: this member's view of the cluster and the inputs it
// refused, as one JSON document (control::MembersReply).
#pragma once

#include <string>
#include <vector>

#include "control/replies/members.hpp"
#include "gossip/types.hpp"
#include "wire/reject.hpp"

namespace shoal::daemon {

// Every cause, zeros included, so that readers see a stable set of keys; the core's and the shell's
// counts summed (also for the `stats` reply).
control::RejectCounts reject_counts(const wire::RejectCounters& core_rejects,
                                    const wire::RejectCounters& shell_rejects);

// Members are listed by name; "rejected" is reject_counts().
std::string members_json(const std::string& self, std::vector<gossip::Member> members,
                         const wire::RejectCounters& core_rejects, const wire::RejectCounters& shell_rejects);

}  // namespace shoal::daemon

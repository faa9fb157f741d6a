// Filling the `members` reply from the gossip core's member list and the reject counters.
#include "daemon/reports/members_report.hpp"

#include <algorithm>

namespace shoal::daemon {

control::RejectCounts reject_counts(const wire::RejectCounters& core_rejects,
                                    const wire::RejectCounters& shell_rejects) {
  control::RejectCounts counts;
  for (size_t i = 0; i < wire::kRejectCauses; ++i) {
    const auto cause = static_cast<wire::RejectCause>(i);
    counts.by_cause.emplace_back(wire::name(cause), core_rejects.get(cause) + shell_rejects.get(cause));
  }
  return counts;
}

std::string members_json(const std::string& self, std::vector<gossip::Member> members,
                         const wire::RejectCounters& core_rejects, const wire::RejectCounters& shell_rejects) {
  std::sort(members.begin(), members.end(), [](const gossip::Member& a, const gossip::Member& b) {
    return a.id.name != b.id.name ? a.id.name < b.id.name : a.id.generation < b.id.generation;
  });
  control::MembersReply reply;
  reply.self = self;
  for (const auto& m : members) {
    reply.members.push_back({m.id.name, m.id.addr, gossip::to_string(m.state), m.incarnation, m.id.generation});
  }
  reply.rejected = reject_counts(core_rejects, shell_rejects);
  return control::write_reply(reply);
}

}  // namespace shoal::daemon

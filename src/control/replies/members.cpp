// JSON conversions of the `members` reply.
#include "control/replies/members.hpp"

namespace shoal::control {

std::optional<uint64_t> RejectCounts::find(std::string_view cause) const {
  for (const auto& [name, count] : by_cause) {
    if (name == cause) return count;
  }
  return std::nullopt;
}

void to_json(Json& j, const RejectCounts& r) {
  j = Json::object();
  for (const auto& [cause, count] : r.by_cause) j[cause] = count;
}

void from_json(const Json& j, RejectCounts& r) {
  require_object(j, "the rejected inputs");
  r.by_cause.clear();
  for (const auto& [cause, count] : j.items()) r.by_cause.emplace_back(cause, count.get<uint64_t>());
}

SHOAL_JSON_MEMBERS(MemberRow, name, addr, state, incarnation, generation)
SHOAL_JSON_MEMBERS(MembersReply, self, members, rejected)

}  // namespace shoal::control

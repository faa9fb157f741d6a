// Rendering the member list and reject counters as the `members` JSON document.
#include "daemon/reports/members_report.hpp"

#include <algorithm>

#include "control/json_writer.hpp"

namespace shoal::daemon {

std::string members_json(const std::string& self, std::vector<gossip::Member> members,
                         const wire::RejectCounters& core_rejects, const wire::RejectCounters& shell_rejects) {
  std::sort(members.begin(), members.end(), [](const gossip::Member& a, const gossip::Member& b) {
    return a.id.name != b.id.name ? a.id.name < b.id.name : a.id.generation < b.id.generation;
  });
  control::JsonWriter w;
  w.begin_object();
  w.key("self").value(self);
  w.key("members").begin_array();
  for (const auto& m : members) {
    w.begin_object();
    w.key("name").value(m.id.name);
    w.key("addr").value(m.id.addr);
    w.key("state").value(gossip::to_string(m.state));
    w.key("incarnation").value(m.incarnation);
    w.key("generation").value(m.id.generation);
    w.end_object();
  }
  w.end_array();
  w.key("rejected").begin_object();
  for (size_t i = 0; i < wire::kRejectCauses; ++i) {
    const auto cause = static_cast<wire::RejectCause>(i);
    w.key(wire::name(cause)).value(core_rejects.get(cause) + shell_rejects.get(cause));
  }
  w.end_object();
  w.end_object();
  return w.str();
}

}  // namespace shoal::daemon

// The committed view, its status and its ranks, as the `view` reply and as text for people.
#include "daemon/reports/view_report.hpp"

#include <fmt/format.h>

#include "ranks/rank_table.hpp"

namespace shoal::daemon {

control::ViewReply view_report(const std::string& self, const membership::View& view,
                               const membership::KeeperStatus& status) {
  const ranks::RankTable table(view);
  control::ViewReply reply;
  reply.self = self;
  reply.epoch = view.epoch();
  reply.hash = fmt::format("{:016x}", view.hash());
  reply.status = membership::to_string(status.phase);
  reply.reason = status.reason;
  reply.world_size = table.world_size();
  reply.live_of_view = status.live_of_view;
  reply.in_view = status.in_view;
  for (const auto& m : view.members()) {
    reply.members.push_back({m.name, m.host, m.addr, m.slots, m.join_epoch, m.generation});
  }
  for (const auto& r : table.ranks()) {
    reply.ranks.push_back({r.global_rank, r.local_rank, r.node_rank, r.member, r.local_rank});
  }
  return reply;
}

Result<std::string> render_view_table(const control::JsonValue& doc) {
  const auto text = [](const control::JsonValue& obj, const char* key) -> std::string {
    const control::JsonValue* v = obj.find(key);
    if (v == nullptr) return "?";
    if (auto s = v->as_string()) return *s;
    if (auto n = v->as_uint64()) return std::to_string(*n);
    if (auto b = v->as_bool()) return *b ? "yes" : "no";
    return "?";
  };
  const control::JsonValue* members = doc.find("members");
  const control::JsonValue* ranks = doc.find("ranks");
  if (members == nullptr || ranks == nullptr || doc.find("epoch") == nullptr) {
    return fail("the agent's reply is not a view");
  }
  std::string out = "epoch " + text(doc, "epoch") + "  hash " + text(doc, "hash") + "  world size " +
                    text(doc, "world_size") + "  status " + text(doc, "status");
  const std::string reason = text(doc, "reason");
  if (!reason.empty() && reason != "?") out += " (" + reason + ")";
  out += "\n";
  if (text(doc, "in_view") == "no") out += "this member (" + text(doc, "self") + ") is not in the view\n";
  out += fmt::format("{:<20} {:<22} {:>5} {:>6}  {}\n", "MEMBER", "ADDR", "SLOTS", "JOINED", "RANKS");
  for (const auto& m : members->items()) {
    const std::string name = text(m, "name");
    std::string rank_list;
    for (const auto& r : ranks->items()) {
      if (text(r, "name") == name) rank_list += (rank_list.empty() ? "" : ",") + text(r, "rank");
    }
    out += fmt::format("{:<20} {:<22} {:>5} {:>6}  {}\n", name + (name == text(doc, "self") ? " *" : ""),
                       text(m, "addr"), text(m, "slots"), text(m, "join_epoch"), rank_list.empty() ? "-" : rank_list);
  }
  return out;
}

}  // namespace shoal::daemon

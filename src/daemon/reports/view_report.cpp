// The committed view, its status and its ranks, as a JSON document and as text for people.
#include "daemon/reports/view_report.hpp"

#include <fmt/format.h>

#include "control/json_writer.hpp"
#include "ranks/rank_table.hpp"

namespace shoal::daemon {

std::string view_json(const std::string& self, const membership::View& view, const membership::KeeperStatus& status) {
  const ranks::RankTable table(view);
  control::JsonWriter w;
  w.begin_object();
  w.key("self").value(self);
  w.key("epoch").value(view.epoch());
  w.key("hash").value(fmt::format("{:016x}", view.hash()));
  w.key("status").value(membership::to_string(status.phase));
  w.key("reason").value(status.reason);
  w.key("world_size").value(uint64_t{table.world_size()});
  w.key("live_of_view").value(uint64_t{status.live_of_view});
  w.key("in_view").value(status.in_view);
  w.key("members").begin_array();
  for (const auto& m : view.members()) {
    w.begin_object();
    w.key("name").value(m.name);
    w.key("host").value(m.host);
    w.key("addr").value(m.addr);
    w.key("slots").value(uint64_t{m.slots});
    w.key("join_epoch").value(m.join_epoch);
    w.key("generation").value(m.generation);
    w.end_object();
  }
  w.end_array();
  w.key("ranks").begin_array();
  for (const auto& r : table.ranks()) {
    w.begin_object();
    w.key("rank").value(uint64_t{r.global_rank});
    w.key("local_rank").value(uint64_t{r.local_rank});
    w.key("node_rank").value(uint64_t{r.node_rank});
    w.key("name").value(r.member);
    w.key("slot").value(uint64_t{r.local_rank});
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return w.str();
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

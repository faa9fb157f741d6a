// The committed view, its status and its ranks, as the `view` reply and as text for people.
#include "daemon/reports/view_report.hpp"

#include <fmt/format.h>

#include "base/str_cat.hpp"
#include "ranks/rank_table.hpp"

namespace shoal::daemon {

control::ViewReply view_report(const std::string& self, const membership::View& view,
                               const membership::KeeperStatus& status) {
  const ranks::RankTable table(view);
  control::ViewReply reply;
  reply.self = self;
  reply.epoch = view.epoch();
  reply.hash = fmt::format("{:016x}", view.hash());
  reply.lineage = fmt::format("{:016x}", view.lineage());
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
  reply.evicted = view.evicted();
  reply.excluded = view.excluded();
  return reply;
}

std::string render_view_table(const control::ViewReply& view) {
  std::string out =
      fmt::format("epoch {}  hash {}  world size {}  status {}", view.epoch, view.hash, view.world_size, view.status);
  if (!view.reason.empty()) out += " (" + view.reason + ")";
  out += "\n";
  if (!view.in_view) out += "this member (" + view.self + ") is not in the view\n";
  out += fmt::format("{:<20} {:<22} {:>5} {:>6}  {}\n", "MEMBER", "ADDR", "SLOTS", "JOINED", "RANKS");
  for (const auto& m : view.members) {
    std::string rank_list;
    for (const auto& r : view.ranks) {
      if (r.name == m.name) rank_list += str_cat(rank_list.empty() ? "" : ",", std::to_string(r.rank));
    }
    out += fmt::format("{:<20} {:<22} {:>5} {:>6}  {}\n", m.name + (m.name == view.self ? " *" : ""), m.addr, m.slots,
                       m.join_epoch, rank_list.empty() ? "-" : rank_list);
  }
  if (!view.excluded.empty()) {
    out += "excluded by the operator (`shoal view readmit NAME` lets one back): " + joined(view.excluded) + "\n";
  }
  return out;
}

}  // namespace shoal::daemon

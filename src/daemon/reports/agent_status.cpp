// The `status` control reply: what `shoal status` shows an operator on one screen.
#include <fmt/format.h>

#include <map>

#include "control/replies/status.hpp"
#include "daemon/agent.hpp"
#include "daemon/gossip_runtime.hpp"
#include "daemon/membership_runtime.hpp"

namespace shoal::daemon {
namespace {

control::ViewChangeRow row_of(const ViewChange& c) {
  control::ViewChangeRow row;
  row.epoch = c.epoch;
  row.members = c.members;
  row.joined = c.joined;
  row.left = c.left;
  row.trigger = c.trigger;
  row.seconds = c.seconds;
  row.committed_unix = c.committed_unix;
  return row;
}

}  // namespace

void Agent::serve_history_requests() {
  control_handlers_.add("view-history",
                        "the committed views this agent kept (the last 256; status shows the last 8), oldest first",
                        [this](std::span<const std::string> args) {
                          if (!args.empty()) return control_handlers_.error_reply("view-history takes no arguments");
                          control::ViewHistoryReply reply;
                          reply.self = cfg_.name;
                          reply.kept = ViewHistory::kKept;
                          reply.recorded = history_.recorded();
                          for (const auto& c : history_.all_changes()) {
                            reply.view_changes.push_back(row_of(c));
                            if (c.joined.size() < c.joined_count || c.left.size() < c.left_count) {
                              reply.cut.push_back({c.epoch, c.joined_count, c.left_count});
                            }
                          }
                          return control::write_reply(reply);
                        });
}

std::string Agent::status_reply() const {
  if (!runtime_ || !membership_ || !checkpoints_) return control_handlers_.error_reply("the agent has not started");
  const auto& keeper = membership_->keeper();
  const auto& view = keeper.view();
  const auto status = keeper.status();
  control::StatusReply reply;
  reply.self = cfg_.name;
  reply.addr = addr_;
  reply.generation = generation_;
  reply.cluster = cfg_.gossip.cluster_id;
  reply.keyed = seal_ && seal_->keyed();
  reply.slots = cfg_.meta.slots;
  reply.view = {view.epoch(),  view.size(),    membership::to_string(status.phase),
                status.reason, status.in_view, status.live_of_view};

  std::map<std::string, uint64_t> by_state;
  for (const auto& m : runtime_->swim().members()) ++by_state[gossip::to_string(m.state)];
  reply.members_by_state = {by_state["alive"], by_state["suspect"], by_state["dead"], by_state["left"]};

  for (const auto& c : history_.changes()) reply.view_changes.push_back(row_of(c));

  control::StatusCheckpoints& k = reply.checkpoints;
  for (const auto& h : checkpoints_->held()) {
    if (!h.version) continue;
    (h.replica ? k.replicas : k.local_versions) += 1;
    (h.replica ? k.replica_bytes : k.local_bytes) += h.version->total_bytes;
  }
  const auto counters = checkpoints_->counters();
  k.job = checkpoints_->config().job;
  k.pushed = counters.pushed;
  k.push_failed = counters.push_failed;
  k.received = counters.received;
  k.receive_refused = counters.receive_refused;
  for (const auto& l : checkpoints_->replication_lag()) {
    control::LagRow& row = k.lag.emplace_back(control::LagRow{l.rank, l.committed, std::nullopt, std::nullopt});
    if (l.replicated) {
      row.replicated_step = *l.replicated;
      row.steps_behind = l.committed - *l.replicated;
    }
  }
  if (const auto& h = health_.latest()) reply.health = {true, h->epoch, h->step, h->stragglers, {}, 0};
  reply.health.eviction = eviction_line();
  reply.health.evictions = status.evictions;
  const auto now = std::chrono::steady_clock::now();
  for (const auto& [slot, e] : trainers_.ranks()) {
    auto& row = reply.trainers.emplace_back();
    row.rank = slot;
    row.age_s = std::chrono::duration<double>(now - e.received).count();
    row.reports = e.reports;
    for (size_t i = 0; i < health::kTrainerFigureCount; ++i) {
      if (const auto& v = e.stats.figures[i]) row.figures.emplace_back(health::kTrainerFigures[i].key, *v);
    }
  }
  return control::write_reply(reply);
}

}  // namespace shoal::daemon

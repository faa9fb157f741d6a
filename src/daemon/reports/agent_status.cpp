// The `status` control reply: what `shoal status` shows an operator on one screen.
#include <fmt/format.h>

#include <map>

#include "control/replies/status.hpp"
#include "daemon/agent.hpp"
#include "daemon/gossip_runtime.hpp"
#include "daemon/membership_runtime.hpp"

namespace shoal::daemon {

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

  for (const auto& c : history_.changes()) {
    reply.view_changes.push_back({c.epoch, c.members, c.joined, c.left, c.trigger, c.seconds, c.committed_unix});
  }

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
  return control::write_reply(reply);
}

}  // namespace shoal::daemon

// The `status` control reply: what `shoal status` shows an operator on one screen.
#include <fmt/format.h>

#include <map>

#include "control/json_writer.hpp"
#include "daemon/agent.hpp"
#include "daemon/gossip_runtime.hpp"
#include "daemon/membership_runtime.hpp"

namespace shoal::daemon {

std::string Agent::status_reply() const {
  if (!runtime_ || !membership_ || !checkpoints_) return control_handlers_.error_reply("the agent has not started");
  const auto& keeper = membership_->keeper();
  const auto& view = keeper.view();
  const auto status = keeper.status();
  control::JsonWriter w;
  w.begin_object().key("self").value(cfg_.name).key("addr").value(addr_).key("generation").value(generation_);
  w.key("cluster").value(cfg_.gossip.cluster_id).key("slots").value(cfg_.meta.slots);
  w.key("view")
      .begin_object()
      .key("epoch")
      .value(view.epoch())
      .key("members")
      .value(static_cast<uint64_t>(view.size()));
  w.key("status").value(membership::to_string(status.phase)).key("reason").value(status.reason);
  w.key("in_view").value(status.in_view).key("live_of_view").value(static_cast<uint64_t>(status.live_of_view));
  w.end_object();

  std::map<std::string, uint64_t> by_state;
  for (const auto& m : runtime_->swim().members()) ++by_state[gossip::to_string(m.state)];
  w.key("members_by_state").begin_object();
  for (const char* s : {"alive", "suspect", "dead", "left"}) w.key(s).value(by_state[s]);
  w.end_object();

  w.key("view_changes").begin_array();
  for (const auto& c : history_.changes()) {
    w.begin_object().key("epoch").value(c.epoch).key("members").value(static_cast<uint64_t>(c.members));
    w.key("joined").begin_array();
    for (const auto& n : c.joined) w.value(n);
    w.end_array().key("left").begin_array();
    for (const auto& n : c.left) w.value(n);
    w.end_array().key("trigger").value(c.trigger);
    if (c.seconds) w.key("seconds").value(*c.seconds);
    w.key("committed_unix").value(c.committed_unix).end_object();
  }
  w.end_array();

  uint64_t local = 0, local_bytes = 0, replicas = 0, replica_bytes = 0;
  for (const auto& h : checkpoints_->held()) {
    if (!h.version) continue;
    (h.replica ? replicas : local) += 1;
    (h.replica ? replica_bytes : local_bytes) += h.version->total_bytes;
  }
  const auto counters = checkpoints_->counters();
  w.key("checkpoints").begin_object().key("job").value(checkpoints_->config().job);
  w.key("local_versions").value(local).key("local_bytes").value(local_bytes);
  w.key("replicas").value(replicas).key("replica_bytes").value(replica_bytes);
  w.key("pushed").value(counters.pushed).key("push_failed").value(counters.push_failed);
  w.key("received").value(counters.received).key("receive_refused").value(counters.receive_refused);
  w.key("lag").begin_array();
  for (const auto& l : checkpoints_->replication_lag()) {
    w.begin_object().key("rank").value(l.rank).key("committed_step").value(l.committed);
    if (l.replicated)
      w.key("replicated_step").value(*l.replicated).key("steps_behind").value(l.committed - *l.replicated);
    w.end_object();
  }
  w.end_array().end_object().end_object();
  return w.str();
}

}  // namespace shoal::daemon

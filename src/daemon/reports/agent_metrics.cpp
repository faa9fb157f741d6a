// The agent's Prometheus metrics: what an operator graphs and alerts on.
#include <map>

#include "ckpt_shm/persist_trust.hpp"
#include "ckpt_shm/segment_trust.hpp"
#include "control/server.hpp"
#include "daemon/agent.hpp"
#include "daemon/gossip_runtime.hpp"
#include "daemon/membership_runtime.hpp"
#include "daemon/metrics_server.hpp"
#include "daemon/reports/metrics_text.hpp"
#include "net/stream_listener.hpp"

namespace shoal::daemon {
namespace {

template <size_t N>
std::vector<double> to_vector(const std::array<double, N>& a) {
  return {a.begin(), a.end()};
}

}  // namespace

uint16_t Agent::metrics_port() const { return metrics_ ? metrics_->port() : 0; }

std::string Agent::metrics_text() const {
  PromText m;
  if (!runtime_ || !membership_ || !checkpoints_) return m.str();
  const auto& swim = runtime_->swim();
  std::map<std::string, uint64_t> by_state;
  for (const auto& member : swim.members()) ++by_state[gossip::to_string(member.state)];
  for (const char* s : {"alive", "suspect", "dead", "left"}) {
    m.gauge("shoal_members", "members this agent knows, by gossip state", static_cast<double>(by_state[s]),
            {{"state", s}});
  }
  const auto& keeper = membership_->keeper();
  const auto status = keeper.status();
  m.gauge("shoal_view_epoch", "epoch of the newest committed view", static_cast<double>(keeper.view().epoch()));
  m.gauge("shoal_cluster_keyed", "1 when this agent runs with a cluster key, 0 when it runs open (--insecure)",
          seal_ && seal_->keyed() ? 1 : 0);
  m.counter("shoal_control_refused_total",
            "control requests refused because the caller may not send them (view-force from another user; "
            "ckpt-committed, peer-lost, health-report, trainer-stats or check from outside the agent's user and group)",
            static_cast<double>(control_handlers_.refused()));
  m.counter("shoal_control_connections_refused_total",
            "control connections refused because the socket serves that many at once already (another user's share "
            "is three quarters of them)",
            static_cast<double>(control_server_ ? control_server_->refused_connections() : 0));
  m.gauge("shoal_view_members", "members of the newest committed view", static_cast<double>(keeper.view().size()));
  for (size_t i = 0; i < membership::kViewRefusals; ++i) {
    const auto cause = static_cast<membership::ViewRefusal>(i);
    m.counter("shoal_view_refused_total",
              "views and ballots from peers refused, by cause: epoch_overflow (2^64-1), epoch_jump (2^32 ahead), "
              "outsider (a COMMIT from outside both views), unconfirmed (rounds asking the members of this member's "
              "view that confirmed nothing: a forgery, or a change still spreading), ballot (a round far beyond any "
              "seen)",
              static_cast<double>(keeper.stats().refused[i]), {{"cause", std::string(membership::name(cause))}});
  }
  m.counter("shoal_view_catch_ups_total", "newer views installed once members of this member's view confirmed them",
            static_cast<double>(keeper.stats().catch_ups));
  m.gauge("shoal_view_excluded",
          "members the committed view keeps out by the operator's exclusion (shoal view exclude)",
          static_cast<double>(keeper.view().excluded().size()));
  m.gauge("shoal_view_in_view", "1 when this member is in the committed view", status.in_view ? 1 : 0);
  m.gauge("shoal_view_stable", "1 when the committed view matches the live members",
          status.phase == membership::KeeperPhase::stable ? 1 : 0);
  const auto& d = history_.durations();
  m.histogram("shoal_view_change_seconds", "from the gossip event that started a view change to its commit, here",
              to_vector(ViewHistory::kBoundsSeconds), {d.buckets.begin(), d.buckets.end()}, d.sum);

  const auto& s = swim.stats();
  std::vector<double> rtt_bounds;
  for (uint64_t us : gossip::Stats::kProbeRttBoundsUs) rtt_bounds.push_back(static_cast<double>(us) / 1e6);
  m.histogram("shoal_probe_rtt_seconds", "probe round trips, from the ping to the ack that completed the probe",
              rtt_bounds, {s.probe_rtt_buckets.begin(), s.probe_rtt_buckets.end()},
              static_cast<double>(s.probe_rtt_sum_us) / 1e6);
  m.counter("shoal_probes_total", "probes by outcome", static_cast<double>(s.probes_sent), {{"outcome", "sent"}});
  m.counter("shoal_probes_total", "probes by outcome", static_cast<double>(s.acks_received), {{"outcome", "acked"}});
  m.counter("shoal_probes_total", "probes by outcome", static_cast<double>(s.probes_failed), {{"outcome", "failed"}});
  const char* packets = "gossip UDP packets";
  m.counter("shoal_packets_total", packets, static_cast<double>(s.packets_in), {{"direction", "in"}});
  m.counter("shoal_packets_total", packets, static_cast<double>(s.packets_out), {{"direction", "out"}});
  const char* bytes = "gossip bytes, UDP and TCP streams";
  m.counter("shoal_bytes_total", bytes, static_cast<double>(s.bytes_in + s.stream_bytes_in), {{"direction", "in"}});
  m.counter("shoal_bytes_total", bytes, static_cast<double>(s.bytes_out + s.stream_bytes_out), {{"direction", "out"}});
  const auto& shell = listener_->rejected();
  for (size_t i = 0; i < wire::kRejectCauses; ++i) {
    const auto cause = static_cast<wire::RejectCause>(i);
    m.counter("shoal_rejected_total", "refused input (packets, frames, connections) by cause",
              static_cast<double>(s.rejected.get(cause) + shell.get(cause)),
              {{"cause", std::string(wire::name(cause))}});
  }
  // How full each connection budget of the TCP port is (net/connection_budget.hpp); a flood shows as
  // "unauthenticated" at its cap and rejected{cause="overloaded"} rising.
  const auto& budget = listener_->budget();
  const char* connections = "TCP connections held now, by budget: in their hello/handshake, authenticated, waiting";
  m.gauge("shoal_tcp_connections", connections, static_cast<double>(budget.unauthenticated()),
          {{"budget", "unauthenticated"}});
  m.gauge("shoal_tcp_connections", connections, static_cast<double>(budget.authenticated()),
          {{"budget", "authenticated"}});
  m.gauge("shoal_tcp_connections", connections, static_cast<double>(budget.waiting()), {{"budget", "waiting"}});

  const auto c = checkpoints_->counters();
  m.counter("shoal_ckpt_saved_total", "checkpoint versions local ranks committed", static_cast<double>(c.committed));
  m.counter("shoal_ckpt_replicated_total", "versions stored at a peer", static_cast<double>(c.pushed));
  m.counter("shoal_ckpt_replicated_bytes_total", "bytes of versions stored at a peer",
            static_cast<double>(c.pushed_bytes));
  m.counter("shoal_ckpt_replicate_failed_total", "pushes to a peer that failed", static_cast<double>(c.push_failed));
  m.counter("shoal_ckpt_received_total", "replicas kept here for peers", static_cast<double>(c.received));
  m.counter("shoal_ckpt_receive_refused_total", "replicas refused (bad stream, checksum, budget)",
            static_cast<double>(c.receive_refused));
  for (size_t i = 0; i < ckpt_service::kRefusals; ++i) {
    const std::string cause(ckpt_service::name(static_cast<ckpt_service::Refusal>(i)));
    const char* help =
        "checkpoint pushes and fetches refused before any byte moved: not a member of the view, "
        "not the member placement sends here, a rank that is not the sender's, or no view yet";
    m.counter("shoal_ckpt_unauthorized_total", help, static_cast<double>(c.push_unauthorized[i]),
              {{"kind", "push"}, {"cause", cause}});
    m.counter("shoal_ckpt_unauthorized_total", help, static_cast<double>(c.fetch_unauthorized[i]),
              {{"kind", "fetch"}, {"cause", cause}});
  }
  for (size_t i = 0; i < ckpt::kSegmentRefusals; ++i) {
    const auto cause = static_cast<ckpt::SegmentRefusal>(i);
    m.counter("shoal_ckpt_segments_refused_total",
              "objects named like this host's checkpoint segments that were not opened (a link, a FIFO, another "
              "user's file, a mode others can read), by cause",
              static_cast<double>(ckpt::refused_segments(cause)), {{"cause", std::string(ckpt::name(cause))}});
  }
  for (size_t i = 0; i < ckpt::kPersistRefusals; ++i) {
    const auto cause = static_cast<ckpt::PersistRefusal>(i);
    m.counter("shoal_ckpt_persist_refused_total",
              "directories and files of the persist directory (--ckpt-dir) that were refused (another user's or "
              "writable by others, a link, a FIFO, oversized, not the version its name says), by cause",
              static_cast<double>(ckpt::refused_persisted(cause)), {{"cause", std::string(ckpt::name(cause))}});
  }
  uint64_t local_bytes = 0, replica_bytes = 0;
  for (const auto& h : checkpoints_->held()) {
    if (h.version) (h.replica ? replica_bytes : local_bytes) += h.version->total_bytes;
  }
  const char* held = "bytes of sealed checkpoint versions in this host's shared memory";
  m.gauge("shoal_ckpt_held_bytes", held, static_cast<double>(local_bytes), {{"kind", "local"}});
  m.gauge("shoal_ckpt_held_bytes", held, static_cast<double>(replica_bytes), {{"kind", "replica"}});
  for (const auto& l : checkpoints_->replication_lag()) {
    const double behind =
        l.replicated ? static_cast<double>(l.committed - *l.replicated) : static_cast<double>(l.committed + 1);
    m.gauge("shoal_ckpt_replication_lag_steps",
            "saved step minus the newest step every chosen peer holds (none yet: the saved step + 1)", behind,
            {{"rank", std::to_string(l.rank)}});
  }
  const char* straggler = "1 when the local trainer's straggler verdict names the host (figures from the job's steps)";
  const char* compute = "median seconds per step a host spends outside collectives (compute), over the rule's window";
  const char* wait = "median seconds per step a host waits inside collectives, over the rule's window";
  size_t named = 0;
  if (const auto& h = health_.latest()) {
    for (const auto& host : h->hosts) {
      m.gauge("shoal_straggler", straggler, host.straggler ? 1 : 0, {{"host", host.name}});
      m.gauge("shoal_host_compute_seconds", compute, host.compute_ms / 1000.0, {{"host", host.name}});
      m.gauge("shoal_host_wait_seconds", wait, host.wait_ms / 1000.0, {{"host", host.name}});
    }
    named = h->stragglers.size();
  }
  m.gauge("shoal_stragglers", "hosts the straggler verdict names now", static_cast<double>(named));
  m.counter("shoal_straggler_changes_total", "changes of the straggler verdict this agent was told",
            static_cast<double>(health_.changes()));
  const char* dropped =
      "timing figures refused by the local trainer's session: whole records, or single figures out of range";
  const auto& latest = health_.latest();
  m.counter("shoal_health_dropped_total", dropped, latest ? static_cast<double>(latest->dropped_records) : 0,
            {{"kind", "record"}});
  m.counter("shoal_health_dropped_total", dropped, latest ? static_cast<double>(latest->dropped_figures) : 0,
            {{"kind", "figure"}});
  m.counter("shoal_health_dropped_total", dropped, latest ? static_cast<double>(latest->forged_records) : 0,
            {{"kind", "forged"}});
  m.counter("shoal_health_reports_refused_total",
            "connected trainers' health-report parts this agent refused (malformed, out of order, unknown epoch)",
            static_cast<double>(health_reports_rejected_));
  if (membership_) {
    const auto ks = membership_->keeper().status();
    m.counter("shoal_evictions_total", "committed views that evicted a straggler (--evict-stragglers), seen here",
              static_cast<double>(ks.evictions));
    m.gauge("shoal_evicted", "1 while this member is out of the view as an evicted straggler", ks.evicted ? 1 : 0);
  }
  trainer_metrics(m);
  return m.str();
}

}  // namespace shoal::daemon

// Filling the `stats` reply from gossip::Stats and the shell's counters.
#include "daemon/reports/stats_report.hpp"

#include "control/replies/stats.hpp"
#include "daemon/reports/members_report.hpp"

namespace shoal::daemon {

std::string stats_json(const gossip::Swim& swim, const wire::RejectCounters& shell_rejects) {
  const gossip::Stats& s = swim.stats();
  control::StatsReply reply;
  reply.self = swim.self().name;
  reply.generation = swim.self().generation;
  reply.live_members = swim.live_count();
  reply.local_health = swim.local_health();
  control::GossipCounters& g = reply.gossip;
  g.packets_in = s.packets_in;
  g.packets_out = s.packets_out;
  g.bytes_in = s.bytes_in;
  g.bytes_out = s.bytes_out;
  g.stream_requests_in = s.stream_requests_in;
  g.stream_requests_out = s.stream_requests_out;
  g.stream_bytes_in = s.stream_bytes_in;
  g.stream_bytes_out = s.stream_bytes_out;
  g.probes_sent = s.probes_sent;
  g.acks_received = s.acks_received;
  g.probes_failed = s.probes_failed;
  g.indirect_probes_sent = s.indirect_probes_sent;
  g.indirect_acks = s.indirect_acks;
  g.fallback_probes_sent = s.fallback_probes_sent;
  g.fallback_acks = s.fallback_acks;
  g.relayed_pings = s.relayed_pings;
  g.nacks_sent = s.nacks_sent;
  g.nacks_received = s.nacks_received;
  g.stale_acks = s.stale_acks;
  g.stale_timers = s.stale_timers;
  g.suspicions_raised = s.suspicions_raised;
  g.confirmations = s.confirmations;
  g.deaths_declared = s.deaths_declared;
  g.refutations = s.refutations;
  g.suspicions_verified = s.suspicions_verified;
  g.updates_applied = s.updates_applied;
  g.gossip_packets_sent = s.gossip_packets_sent;
  g.broadcasts_dropped = s.broadcasts_dropped;
  g.push_pulls_started = s.push_pulls_started;
  g.push_pulls_completed = s.push_pulls_completed;
  g.push_pulls_failed = s.push_pulls_failed;
  g.push_pull_full_exchanges = s.push_pull_full_exchanges;
  g.stalls_detected = s.stalls_detected;
  g.hints = s.hints;
  g.hints_ignored = s.hints_ignored;
  g.refusals_seen = s.refusals_seen;
  g.refusal_confirmations = s.refusal_confirmations;
  g.refusals_void = s.refusals_void;
  g.deaths_on_refusal = s.deaths_on_refusal;
  reply.rejected = reject_counts(s.rejected, shell_rejects);
  return control::write_reply(reply);
}

}  // namespace shoal::daemon

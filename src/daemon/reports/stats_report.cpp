// Rendering gossip::Stats and the shell's counters as the `stats` JSON document.
#include "daemon/reports/stats_report.hpp"

#include "control/json_writer.hpp"

namespace shoal::daemon {

std::string stats_json(const gossip::Swim& swim, const wire::RejectCounters& shell_rejects) {
  const gossip::Stats& s = swim.stats();
  control::JsonWriter w;
  w.begin_object();
  w.key("self").value(swim.self().name);
  w.key("generation").value(swim.self().generation);
  w.key("live_members").value(static_cast<uint64_t>(swim.live_count()));
  w.key("local_health").value(swim.local_health());
  w.key("gossip").begin_object();
  const std::pair<const char*, uint64_t> counters[] = {
      {"packets_in", s.packets_in},
      {"packets_out", s.packets_out},
      {"bytes_in", s.bytes_in},
      {"bytes_out", s.bytes_out},
      {"stream_requests_in", s.stream_requests_in},
      {"stream_requests_out", s.stream_requests_out},
      {"stream_bytes_in", s.stream_bytes_in},
      {"stream_bytes_out", s.stream_bytes_out},
      {"probes_sent", s.probes_sent},
      {"acks_received", s.acks_received},
      {"probes_failed", s.probes_failed},
      {"indirect_probes_sent", s.indirect_probes_sent},
      {"indirect_acks", s.indirect_acks},
      {"fallback_probes_sent", s.fallback_probes_sent},
      {"fallback_acks", s.fallback_acks},
      {"relayed_pings", s.relayed_pings},
      {"nacks_sent", s.nacks_sent},
      {"nacks_received", s.nacks_received},
      {"stale_acks", s.stale_acks},
      {"stale_timers", s.stale_timers},
      {"suspicions_raised", s.suspicions_raised},
      {"confirmations", s.confirmations},
      {"deaths_declared", s.deaths_declared},
      {"refutations", s.refutations},
      {"suspicions_verified", s.suspicions_verified},
      {"updates_applied", s.updates_applied},
      {"gossip_packets_sent", s.gossip_packets_sent},
      {"broadcasts_dropped", s.broadcasts_dropped},
      {"push_pulls_started", s.push_pulls_started},
      {"push_pulls_completed", s.push_pulls_completed},
      {"push_pulls_failed", s.push_pulls_failed},
      {"push_pull_full_exchanges", s.push_pull_full_exchanges},
      {"stalls_detected", s.stalls_detected},
  };
  for (const auto& [name, value] : counters) w.key(name).value(value);
  w.end_object();
  w.key("rejected").begin_object();
  for (size_t i = 0; i < wire::kRejectCauses; ++i) {
    const auto cause = static_cast<wire::RejectCause>(i);
    w.key(wire::name(cause)).value(s.rejected.get(cause) + shell_rejects.get(cause));
  }
  w.end_object();
  w.end_object();
  return w.str();
}

}  // namespace shoal::daemon

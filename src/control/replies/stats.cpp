// JSON conversions of the `stats` reply.
#include "control/replies/stats.hpp"

namespace shoal::control {

SHOAL_JSON_MEMBERS(GossipCounters, packets_in, packets_out, bytes_in, bytes_out, stream_requests_in,
                   stream_requests_out, stream_bytes_in, stream_bytes_out, probes_sent, acks_received, probes_failed,
                   indirect_probes_sent, indirect_acks, fallback_probes_sent, fallback_acks, relayed_pings, nacks_sent,
                   nacks_received, stale_acks, stale_timers, suspicions_raised, confirmations, deaths_declared,
                   refutations, suspicions_verified, updates_applied, gossip_packets_sent, broadcasts_dropped,
                   push_pulls_started, push_pulls_completed, push_pulls_failed, push_pull_full_exchanges,
                   stalls_detected, hints, hints_ignored, refusals_seen, refusal_confirmations, refusals_void,
                   deaths_on_refusal)
SHOAL_JSON_MEMBERS(StatsReply, self, generation, live_members, local_health, gossip, rejected)

}  // namespace shoal::control

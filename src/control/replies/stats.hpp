// The `stats` reply: the gossip core's counters, its local health and the refused inputs (the core's
// and the shell's, summed), for operators and for tests that look for loss:
//   {"self", "generation", "live_members", "local_health", "gossip": {counter: n...}, "rejected": {cause: n}}
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "control/replies/document.hpp"
#include "control/replies/members.hpp"

namespace shoal::control {

// gossip::Stats as operators see it; members in the order of the document.
struct GossipCounters {
  uint64_t packets_in = 0, packets_out = 0, bytes_in = 0, bytes_out = 0;
  uint64_t stream_requests_in = 0, stream_requests_out = 0, stream_bytes_in = 0, stream_bytes_out = 0;
  uint64_t probes_sent = 0, acks_received = 0, probes_failed = 0;
  uint64_t indirect_probes_sent = 0, indirect_acks = 0, fallback_probes_sent = 0, fallback_acks = 0;
  uint64_t relayed_pings = 0, nacks_sent = 0, nacks_received = 0, stale_acks = 0, stale_timers = 0;
  uint64_t suspicions_raised = 0, confirmations = 0, deaths_declared = 0, refutations = 0;
  uint64_t suspicions_verified = 0, updates_applied = 0, gossip_packets_sent = 0, broadcasts_dropped = 0;
  uint64_t push_pulls_started = 0, push_pulls_completed = 0, push_pulls_failed = 0;
  uint64_t push_pull_full_exchanges = 0, stalls_detected = 0;
  // Evidence from the data plane (src/gossip/README.md).
  uint64_t hints = 0, hints_ignored = 0, refusals_seen = 0, refusal_confirmations = 0, refusals_void = 0;
  uint64_t deaths_on_refusal = 0;
  bool operator==(const GossipCounters&) const = default;
};

struct StatsReply {
  static constexpr const char* kWhat = "gossip statistics";
  static constexpr std::array kRequiredKeys{"self", "gossip"};
  std::string self;
  uint64_t generation = 0;
  uint64_t live_members = 0;
  int64_t local_health = 0;  // Lifeguard's multiplier, 0..awareness_max
  GossipCounters gossip;
  RejectCounts rejected;
  bool operator==(const StatsReply&) const = default;
};

void to_json(Json& j, const GossipCounters& r);
void from_json(const Json& j, GossipCounters& r);
void to_json(Json& j, const StatsReply& r);
void from_json(const Json& j, StatsReply& r);

}  // namespace shoal::control

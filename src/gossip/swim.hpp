// The gossip core's public face: SWIM failure detection with Lifeguard's refinements, piggybacked
// dissemination and push-pull anti-entropy, as a sans-IO state machine (inputs in, Effects out).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "gossip/types.hpp"
#include "wire/packet.hpp"
#include "wire/reject.hpp"

namespace shoal::gossip {

// Every knob of the protocol. Defaults are for a datacenter network (RTT well under 1 ms) and aim
// at: a crash seen as dead by everyone within ~1 s at 16 members and ~2 s at 1024, no false
// removals at 10% packet loss, and under ~1 KB/s per member of UDP traffic in steady state.
// "scaled" below means multiplied by (local health + 1), Lifeguard's slowdown of a member that
// suspects it is itself the problem.
struct Config {
  // Packets and streams carrying another cluster id are refused (and counted).
  std::string cluster_id;

  // One probe per interval (scaled). A failed member is first probed after ~1 interval on average
  // and within ~4-5 intervals at p99, which dominates detection time; with ~35-45-byte pings and
  // acks, 150 ms keeps a member's steady-state traffic near 0.5 KB/s each way.
  uint32_t probe_interval_ms = 150;
  // How long the direct ping waits for its ack (scaled) before indirect probes and the TCP
  // fallback go out. Datacenter RTT is < 1 ms: the margin is for a busy receiver.
  uint32_t probe_timeout_ms = 30;
  // After the direct timeout, how long the indirect probes and the TCP fallback get (scaled)
  // before the target is suspected.
  uint32_t indirect_timeout_ms = 60;
  // Helpers asked to ping a target that did not answer directly (SWIM's k). Each helper fails
  // with ~34% at 10% loss (four datagrams); 4 helpers plus a second direct ping and the TCP ping
  // keep false suspicions rare enough that their gossip does not dominate the traffic under loss.
  uint32_t indirect_checks = 4;
  // A helper that hears nothing from the target within this time tells the prober (Lifeguard
  // nack); below indirect_timeout_ms so that the nack arrives while the prober still listens.
  uint32_t nack_timeout_ms = 40;
  // Send a ping over TCP to a target that did not answer directly, in parallel with the indirect
  // probes: what keeps lossy-but-alive members from being suspected at 10% loss.
  bool fallback_probe = true;

  // Lifeguard's local health multiplier ranges over 0..awareness_max.
  uint32_t awareness_max = 8;

  // Suspicion timeout bounds: min = suspicion_min_ms * max(1, log10 N), max = suspicion_max_mult
  // * min. A suspicion starts at max and shrinks towards min as independent members confirm it:
  // timeout = max(min, max - (max - min) * log(C + 1) / log(K + 1)). Defaults: 181..722 ms at
  // N = 16, 452..1806 ms at N = 1024. min can be short because a live member refutes within a
  // round trip of hearing the suspicion (the accuser tells it directly), and because a live but
  // unlucky member draws no confirmations, so its timer stays near max.
  uint32_t suspicion_min_ms = 150;
  double suspicion_max_mult = 4.0;
  // K: confirmations that bring the timeout down to min (0 when fewer than K + 2 members).
  uint32_t suspicion_confirmations = 3;
  // When a member first hears that another is suspected, it probes the suspect at once with a
  // probability chosen so that about this many members do so: their confirmations shrink the
  // suspicion timeout within a few hundred ms instead of waiting for the round-robin to come by.
  uint32_t confirmation_probes = 4;

  // Evidence from the data plane (README): a connection to a member's own agent port that is refused
  // (its process is gone, its host answers) is strong evidence. A suspicion this member saw refused
  // itself, that refusal_confirmations other members say they saw refused too, and whose suspect has
  // not answered since, ends after refused_suspicion_ms instead of the normal timeout; a silent member
  // keeps the normal timeouts. 0 confirmations turns the rule off.
  uint32_t refusal_confirmations = 2;
  uint32_t refused_suspicion_ms = 10;
  // A hint (Swim::hint_failed: a trainer's connection to the member broke) probes the member at once,
  // direct, indirect and over TCP; at most one hinted probe per member per this long.
  uint32_t hint_interval_ms = 150;

  // Each update is sent up to retransmit_mult * ceil(log10(N + 1)) times by every member
  // (memberlist's LAN value).
  uint32_t retransmit_mult = 4;
  // While updates are queued, send them to gossip_fanout random members every gossip_interval_ms.
  uint32_t gossip_interval_ms = 50;
  uint32_t gossip_fanout = 3;
  // At most this many updates wait in the broadcast queue (the most-sent are dropped first).
  uint32_t broadcast_queue_max = 4096;

  // Push-pull anti-entropy with one random member; the interval grows by one step per doubling
  // of N above 32 (as memberlist does), so its cluster-wide rate stays bounded.
  uint32_t push_pull_interval_ms = 30000;
  // Concurrent push-pull exchanges this member starts (answering is not limited).
  uint32_t push_pull_max_in_flight = 2;
  // A member we keep hearing from but that gossip has not announced to us within this time (a
  // lost broadcast) is pulled by push-pull, rather than waiting for the periodic exchange.
  uint32_t unknown_sender_pull_ms = 1000;
  // Deadline of every TCP request (push-pull, fallback probe) that this member starts.
  uint32_t stream_timeout_ms = 1000;
  // Largest push-pull payload accepted.
  size_t max_stream_bytes = 32u << 20;

  // Until some seed answers, retry the join: first after this long, then twice as long after each
  // unanswered attempt up to join_retry_max_ms (each wait drawn from half to one and a half times it, so
  // members started together do not retry in lockstep, and a seed that a join storm starves is not asked
  // ever faster).
  uint32_t join_retry_ms = 1000;
  uint32_t join_retry_max_ms = 8000;
  // Seeds asked at each join attempt, the next ones of the list at the next attempt: a job that hands
  // every member all N-1 hosts (Slurm) sends N x join_fanout joins in all, not N^2.
  uint32_t join_fanout = 3;
  // Periodically push-pull with one seed and one dead member, so a healed partition merges again.
  uint32_t reconnect_interval_ms = 10000;
  // Dead and left records are kept this long (they stop stale updates from resurrecting them).
  uint32_t tombstone_ttl_ms = 600000;

  // A tick this much later than asked means this process was paused: its own timers that expired
  // meanwhile are not held against others.
  uint32_t stall_threshold_ms = 100;

  // UDP datagram budget (envelope included).
  size_t max_packet_bytes = wire::kMaxPacketBytes;
};

// What the core has done, for metrics and the simulator. Counters only grow.
struct Stats {
  wire::RejectCounters rejected;  // refused inputs by cause
  uint64_t packets_in = 0, packets_out = 0, bytes_in = 0, bytes_out = 0;
  uint64_t stream_requests_out = 0, stream_requests_in = 0, stream_bytes_in = 0, stream_bytes_out = 0;

  uint64_t probes_sent = 0;           // direct pings of a probe round
  uint64_t acks_received = 0;         // acks that completed one of our probes
  uint64_t probes_failed = 0;         // probes that ended with no ack at all
  uint64_t indirect_probes_sent = 0;  // ping-reqs sent to helpers
  uint64_t indirect_acks = 0;         // probes rescued by a helper
  uint64_t fallback_probes_sent = 0;  // TCP pings
  uint64_t fallback_acks = 0;         // probes rescued by the TCP ping
  uint64_t relayed_pings = 0;         // pings sent for others as a helper
  uint64_t nacks_sent = 0, nacks_received = 0;
  uint64_t stale_acks = 0;           // acks of probes that were already over
  uint64_t stale_timers = 0;         // timers that fired after their purpose was gone
  uint64_t suspicions_raised = 0;    // members this member suspected itself
  uint64_t confirmations = 0;        // independent suspicions counted against a timer
  uint64_t deaths_declared = 0;      // suspicion timeouts that expired here
  uint64_t suspicions_verified = 0;  // unconfirmed suspicions whose suspect we probed before judging
  uint64_t refutations = 0;          // times this member raised its incarnation
  uint64_t updates_applied = 0;      // received updates that changed the table
  uint64_t gossip_packets_sent = 0;  // packets sent by the gossip timer
  uint64_t broadcasts_dropped = 0;   // queue overflow
  uint64_t push_pulls_started = 0, push_pulls_completed = 0, push_pulls_failed = 0;
  uint64_t push_pull_full_exchanges = 0;  // exchanges where the digests differed
  uint64_t stalls_detected = 0;           // ticks that came far too late
  uint64_t hints = 0;                     // hinted members probed at once
  uint64_t hints_ignored = 0;             // hints about unknown, dead, or already probed members
  uint64_t refusals_seen = 0;             // our probes that a member's own agent port refused
  uint64_t refusal_confirmations = 0;     // other members' refusals counted against a suspicion
  uint64_t refusals_void = 0;             // refused suspects that answered a probe after all
  uint64_t deaths_on_refusal = 0;         // deaths declared here by the refusal rule

  // Probe round trips, from a probe's ping to the ack that completed it (by any path), as a
  // histogram: probe_rtt_buckets[i] counts those of at most kProbeRttBoundsUs[i] microseconds (not
  // cumulative), the last one those above every bound.
  static constexpr std::array<uint64_t, 8> kProbeRttBoundsUs = {100, 250, 500, 1000, 2500, 10000, 50000, 250000};
  std::array<uint64_t, kProbeRttBoundsUs.size() + 1> probe_rtt_buckets{};
  uint64_t probe_rtt_sum_us = 0;
  void record_probe_rtt(Time rtt);
};

// Checks that a configuration can run (intervals and timeouts positive, the nack before the
// end of the indirect phase, a packet budget that fits a probe); a message a user can act on.
Status validate(const Config& cfg);

class SwimCore;

// One member's gossip state machine. Not thread-safe; every call may fill `out` with packets to
// send, TCP requests to make, member events, and the time of the next wanted on_tick.
//
// Contract with the runtime:
// - every call sets out.wake_at to the core's next deadline: arm the timer with the latest one.
//   A call that comes much later than that (stall_threshold_ms) is taken as a pause of this
//   process: probes in flight are dropped without blaming their targets, suspicions held here are
//   postponed by the pause, so a stalled member never causes the death of others;
// - every StreamRequest gets exactly one on_stream_response (nullopt when it failed or passed its
//   deadline), or instead one on_stream_refused when the connection itself was refused (an RST to
//   the SYN, an ICMP port unreachable); a token it does not know is ignored;
// - packets may be lost, duplicated, reordered or late: stale acks and timers are recognised.
// A member falsely declared dead (paused) comes back in the same generation by refuting with a
// higher incarnation, as in memberlist; a stale alive (incarnation not above the death) never
// revives it. A restarted process (newer generation) is admitted at once over its death record.
class Swim {
 public:
  // seed: the core's own random generator (probe order, helpers, gossip targets, jitter).
  Swim(Config cfg, Identity self, MemberMeta meta, uint64_t seed);
  ~Swim();
  Swim(Swim&&) noexcept;
  Swim& operator=(Swim&&) noexcept;

  // Joins via seed addresses ("host:port") with push-pull; retried until one answers. An empty
  // list starts a new cluster of one.
  void start(const std::vector<std::string>& seed_addrs, Time now, Effects& out);
  // Starts with a roster: members known before any contact (their identities and metadata, as a
  // job's launcher or a simulator's warm start knows them). They are taken as a seed's state would
  // be (events emitted, nothing broadcast), the member counts as joined, and the seeds serve only
  // the periodic re-contact. An empty roster is the start above.
  void start(const std::vector<std::string>& seed_addrs, std::span<const Member> roster, Time now, Effects& out);
  // More seed addresses, learned after start (a seed name that resolved late, or to more addresses):
  // new ones are appended (this member's own address and known seeds skipped), and a member that has not
  // joined yet tries them at once.
  void add_seeds(const std::vector<std::string>& seed_addrs, Time now, Effects& out);
  // One received UDP datagram (a complete wire packet).
  void on_packet(const std::string& from, std::span<const std::byte> bytes, Time now, Effects& out);
  // An incoming TCP request frame payload; returns the response payload (empty vector: close without answering).
  std::vector<std::byte> on_stream_request(const std::string& from, std::span<const std::byte> bytes, Time now,
                                           Effects& out);
  // The answer to one of our StreamRequests (nullopt: it failed or timed out).
  void on_stream_response(uint64_t token, std::optional<std::span<const std::byte>> bytes, Time now, Effects& out);
  // One of our StreamRequests could not connect: the peer's host refused it (nothing listens on the
  // port). Only this, never a timeout or a reset after connecting, is taken as refusal evidence.
  void on_stream_refused(uint64_t token, Time now, Effects& out);
  // Evidence from the data plane: a trainer's connection to `name` (at `generation`) was reset or
  // closed. The member is probed at once, direct, indirect and over TCP; a hint alone never
  // suspects anyone (a member that answers stays). Ignored when the member is unknown, not live, of
  // another generation, already being probed, or hinted less than hint_interval_ms ago.
  void hint_failed(const std::string& name, uint64_t generation, Time now, Effects& out);
  // Members that a committed view holds (passed as alive records: identity, metadata): each one this
  // member has no record of, or only of an older generation, is taken as alive, as a roster entry would
  // be (events emitted, nothing broadcast), and probed like any member from then on. A view vouches for
  // them: its proposer saw them alive, though their news may not have reached here yet; without this a
  // member that proposes next would leave out a live member it had not heard of. Records of the same
  // or a newer generation are left as they are (dead stays dead).
  void vouch(std::span<const Member> members, Time now, Effects& out);
  void on_tick(Time now, Effects& out);
  // Graceful: marks itself left and broadcasts it. The runtime should keep delivering for a short
  // while (a few gossip intervals) so that the news gets out, then stop.
  void leave(Time now, Effects& out);

  const Identity& self() const;
  std::vector<Member> members() const;  // including self, in no particular but deterministic order
  std::optional<Member> find(const std::string& name) const;  // a copy of the record
  const Stats& stats() const;
  int local_health() const;  // Lifeguard's multiplier, 0..awareness_max
  const Config& config() const;
  // Members currently alive or suspect (self included).
  size_t live_count() const;
  // Updates waiting in the broadcast queue (0 once everything learned has been passed on enough).
  size_t queued_updates() const;

 private:
  std::unique_ptr<SwimCore> core_;
};

}  // namespace shoal::gossip

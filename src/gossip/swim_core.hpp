// The orchestrating state machine behind gossip::Swim (internal header). Its members are
// implemented by concern: swim.cpp (entry points, timers, stalls), swim_probe.cpp (probes, acks,
// nacks, relays for others), swim_updates.cpp (applying claims, suspicion, refutation,
// dissemination), swim_streams.cpp (join, push-pull, the TCP fallback probe).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gossip.pb.h"
#include "gossip/broadcast_queue.hpp"
#include "gossip/codec.hpp"
#include "gossip/local_health.hpp"
#include "gossip/member_table.hpp"
#include "gossip/probe_order.hpp"
#include "gossip/suspicion.hpp"
#include "gossip/swim.hpp"
#include "gossip/timer_heap.hpp"

namespace shoal::gossip {

inline constexpr Time kNever = Time::max();

inline Time ms(uint64_t v) { return std::chrono::duration_cast<Time>(std::chrono::milliseconds(v)); }

class SwimCore {
 public:
  SwimCore(Config cfg, Identity self, MemberMeta meta, uint64_t seed);

  void start(const std::vector<std::string>& seed_addrs, std::span<const Member> roster, Time now, Effects& out);
  void add_seeds(const std::vector<std::string>& seed_addrs, Time now, Effects& out);
  void on_packet(const std::string& from, std::span<const std::byte> bytes, Time now, Effects& out);
  std::vector<std::byte> on_stream_request(const std::string& from, std::span<const std::byte> bytes, Time now,
                                           Effects& out);
  void on_stream_response(uint64_t token, std::optional<std::span<const std::byte>> bytes, Time now, Effects& out);
  void on_stream_refused(uint64_t token, Time now, Effects& out);
  void hint_failed(const std::string& name, uint64_t generation, Time now, Effects& out);
  void vouch(std::span<const Member> members, Time now, Effects& out);
  void on_tick(Time now, Effects& out);
  void leave(Time now, Effects& out);

  const Identity& self() const { return table_.self_identity(); }
  const MemberTable& table() const { return table_; }
  size_t queued_updates() const { return queue_.size(); }
  const Stats& stats() const { return stats_; }
  int local_health() const { return health_.score(); }
  const Config& config() const { return cfg_; }

 private:
  // ---- timers: one heap, ordered by (deadline, token); a cancelled timer never wakes the runtime ----
  enum class TimerKind : uint8_t { probe_direct, probe_end, relay_nack, relay_expire, suspicion };
  struct TimerAction {
    TimerKind kind = TimerKind::probe_direct;
    uint32_t seq = 0;  // probes and relays
    std::string name;  // suspicions
  };
  using TimerKey = TimerHeap<TimerAction>::Key;
  TimerKey add_timer(Time at, TimerAction action);
  void cancel_timer(const TimerKey& key) { timers_.cancel(key); }
  void fire(const TimerAction& action);

  // ---- one probe (the round-robin one, or a confirmation of someone else's suspicion) ----
  struct Probe {
    std::string target;
    uint64_t generation = 0;
    std::string addr;
    bool regular = false;  // the round-robin probe counts towards local health
    bool indirect_sent = false;
    bool refused = false;  // its TCP ping was refused by the target's host
    std::vector<std::string> helpers;
    uint32_t nacks = 0;
    Time started{0};  // the direct ping's send time: the round trip's start
    // Where the target's record was when the probe started, and the table's layout then.
    uint32_t position = 0;
    uint64_t layout = 0;
    TimerKey direct_timer{}, end_timer{};
  };
  // ---- a ping sent for another member's probe (we are its helper) ----
  struct Relay {
    std::string prober_addr;
    uint32_t prober_seq = 0;
    std::string target;
    uint64_t generation = 0;
    bool nacked = false;
    TimerKey nack_timer{}, expire_timer{};
  };
  struct Suspicion {
    SuspicionTimer timer;
    uint64_t generation = 0;
    uint64_t incarnation = 0;
    TimerKey key{};
    // The timer ran out once with nobody's word but the accuser's, and we probed the suspect
    // ourselves before believing it (see suspicion_expired).
    bool checked = false;
  };
  enum class StreamKind : uint8_t { join, push_pull, push_state, fallback_probe };
  struct PendingStream {
    StreamKind kind;
    std::string peer_addr;
    uint32_t seq = 0;  // fallback probes
  };

  // swim.cpp
  void enter(Time now);
  void finish(Effects& out);
  void run_due();
  void recover_from_stall(Time lost);
  Time next_wake() const;
  void log_reject(const wire::DecodeError& e, const char* what);
  void note_sender(const std::string& from, const wire::MemberId& sender, MemberRef known);
  // Our record of a packet's sender: found by name, or, for the ack of a probe in flight, read at
  // the position the probe started from (no name lookup: three cache misses in a large table).
  MemberRef sender_record(const wire::MemberId& sender, const pb::Packet& p) const;

  // swim_probe.cpp
  void start_regular_probe();
  // Returns the probe's sequence number.
  uint32_t start_probe(MemberRef target, bool regular);
  // The probe's second phase now, without waiting for the direct ping's timeout (a hinted probe,
  // the check of a refusal someone else saw).
  void escalate_probe(uint32_t seq);
  bool probe_running(std::string_view name) const;  // a probe of `name` is in flight
  // A ping for a direct probe; it carries the suspicion when we hold the target suspect.
  // `target`: our record of the target (empty if we hold none), `generation` the one probed.
  std::string direct_ping_body(uint32_t seq, MemberRef target, uint64_t generation) const;
  void probe_direct_timeout(uint32_t seq);
  void finish_probe(uint32_t seq, bool acked);
  void on_ping(const std::string& from, const wire::MemberId& sender, const pb::Ping& ping, MemberRef known);
  void on_ping_req(const std::string& from, const pb::PingReq& req);
  void on_ack(const wire::Envelope& env, uint32_t seq);
  void on_nack(uint32_t seq);
  void relay_nack(uint32_t seq);
  std::vector<MemberRef> pick_members(size_t k, std::string_view exclude, bool alive_only);

  // swim_updates.cpp
  // from_addr: where to answer a sender that is behind (empty: do not); from_state: read from a
  // push-pull state rather than gossiped.
  void handle_claim(const Claim& c, const std::string& from_addr, bool from_state);
  // A received update: claims that change nothing here are dropped before they are decoded
  // (most updates a member receives are repeats).
  void handle_update(const pb::Update& u, const std::string& from_addr);
  bool worth_correcting(MemberRef record, State claimed) const;
  // `from_addr`: where the claim came from (empty when it came from a stream's state or from us).
  void handle_self_claim(const Claim& c, const std::string& from_addr);
  void refute(uint64_t seen_incarnation, const std::string& accuser, const std::string& from_addr);
  // Sends our own record to the accuser of a claim about us and to the member that passed it on.
  void answer_accusation(const std::string& accuser, const std::string& from_addr);
  // This member's own probe of `name` failed; `refused`: by a refusal from the member's own host.
  void accuse(const std::string& name, bool refused = false);
  void start_suspicion(MemberRef m, const std::string& accuser);
  void reschedule_suspicion(Suspicion& s, const std::string& name);
  // True when the suspicion was given a last check instead of ending in a death (see the .cpp).
  bool verify_before_death(Suspicion& s, MemberRef m);
  void suspicion_expired(const std::string& name);
  void emit(MemberRef m, std::optional<State> previous);
  void broadcast(MemberRef m, std::string_view accuser, bool refused = false);
  void gossip_round();
  uint32_t retransmit_limit() const;
  std::string update_entry(MemberRef m, std::string_view accuser, bool refused = false) const;

  // swim_evidence.cpp: the refusal rule and hints from the data plane
  // A refusal claim (`who` saw the suspect's agent port refuse) counted against suspicion `s`; true
  // when it is news. For `who` == self, an immediate gossip round spreads it.
  bool note_refusal(const std::string& name, Suspicion& s, const std::string& who);
  // The TCP ping of probe `seq` was refused.
  void probe_refused(uint32_t seq);
  // `name` answered us at `generation`: its refusals are void.
  void suspect_answered(std::string_view name, uint64_t generation, const std::string& how);
  // A member that heard of a refused suspicion checks the suspect itself, at once, with probability
  // about confirmation_probes / (N - 2).
  void check_refusal(MemberRef m);
  SuspicionBounds bounds_now() const;
  // Sends `body` plus as many queued updates as fit to `to`.
  void send(const std::string& to, std::string body, bool piggyback = true);

  // swim_streams.cpp
  void send_join();
  void start_push_pull(const std::string& addr, StreamKind kind);
  uint64_t request(const std::string& to, const pb::StreamRequest& msg, StreamKind kind, uint32_t seq, Time deadline);
  void merge_state(const pb::FullState& state, const std::string& peer);
  void reconnect();
  // What reconnect() contacts: seeds that are not live members here (indices into seeds_) and
  // dead members with an address (positions), as of the table's version.
  struct ReconnectScan {
    uint64_t version = 0;
    std::vector<size_t> strangers;
    std::vector<uint32_t> dead;
  };
  ReconnectScan scan_for_reconnect() const;
  Time push_pull_interval() const;

  Config cfg_;
  std::mt19937_64 rng_;
  MemberTable table_;
  ProbeOrder order_;
  LocalHealth health_;
  BroadcastQueue queue_;
  PacketWriter writer_;
  wire::Envelope stream_envelope_;  // sender fields of every stream payload
  wire::PacketLimits udp_limits_, stream_limits_;
  Stats stats_;
  Effects* out_ = nullptr;  // the effects of the call in progress
  Time now_{0};

  bool started_ = false;
  bool leaving_ = false;
  std::optional<Time> wanted_wake_;  // the wake-up we last asked for: a call much later means we were paused

  TimerHeap<TimerAction> timers_;
  uint64_t next_token_ = 1;
  uint32_t next_seq_ = 1;

  std::map<uint32_t, Probe> probes_;
  Time next_probe_at_ = kNever;
  std::map<uint32_t, Relay> relays_;
  std::map<std::string, Suspicion, std::less<>> suspicions_;

  Time next_gossip_at_{0};
  Time next_push_pull_at_ = kNever;
  Time next_reconnect_at_ = kNever;
  Time next_reap_at_ = kNever;

  std::vector<std::string> seeds_;
  size_t join_cursor_ = 0;    // the seed the next join attempt starts at
  uint32_t join_attempts_ = 0;  // unanswered join attempts so far (the retry's backoff)
  std::optional<ReconnectScan> reconnect_scan_;
  bool joined_ = false;
  Time next_join_at_ = kNever;
  std::map<uint64_t, PendingStream> streams_;
  bool merging_join_ = false;  // reading the state our seed sent back: nothing in it is news to others
  bool corrected_ = false;     // this packet's sender was already told what it missed
  bool accused_in_packet_ = false;  // this packet accused us: a ping in it is answered with our record
  // Senders we heard from but hold no record of (name -> first heard): if gossip has not told us
  // about one within unknown_sender_pull_ms, we pull its state.
  std::map<std::string, Time> unknown_senders_;
  uint32_t push_pulls_in_flight_ = 0;
  // After joining, a few push-pulls at short intervals catch what the broadcasts of a cluster
  // that is itself starting up did not deliver.
  uint32_t early_push_pulls_left_ = 3;

  // Hinted members and when (at most one hinted probe per member per hint_interval_ms); bounded.
  std::map<std::string, Time, std::less<>> hinted_;
  static constexpr size_t kMaxHinted = 256;

  std::array<std::optional<Time>, wire::kRejectCauses> last_reject_log_{};
  std::optional<Time> last_name_clash_log_;
};

}  // namespace shoal::gossip

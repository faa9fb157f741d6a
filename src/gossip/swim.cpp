// gossip::Swim's entry points: decoding and dispatch of inputs, the timer set, the periodic
// duties of on_tick, and the recovery from a pause of this process.
#include "gossip/swim.hpp"

#include <algorithm>
#include <string_view>

#include "base/log.hpp"
#include "gossip/swim_core.hpp"

namespace shoal::gossip {

void Stats::record_probe_rtt(Time rtt) {
  const auto us = static_cast<uint64_t>(std::max<int64_t>(rtt.count(), 0));
  size_t i = 0;
  while (i < kProbeRttBoundsUs.size() && us > kProbeRttBoundsUs[i]) ++i;
  ++probe_rtt_buckets[i];
  probe_rtt_sum_us += us;
}

// ---- the facade ----------------------------------------------------------------------------

Swim::Swim(Config cfg, Identity self, MemberMeta meta, uint64_t seed)
    : core_(std::make_unique<SwimCore>(std::move(cfg), std::move(self), std::move(meta), seed)) {}
Swim::~Swim() = default;
Swim::Swim(Swim&&) noexcept = default;
Swim& Swim::operator=(Swim&&) noexcept = default;

void Swim::start(const std::vector<std::string>& seed_addrs, Time now, Effects& out) {
  core_->start(seed_addrs, {}, now, out);
}
void Swim::start(const std::vector<std::string>& seed_addrs, std::span<const Member> roster, Time now, Effects& out) {
  core_->start(seed_addrs, roster, now, out);
}
void Swim::add_seeds(const std::vector<std::string>& seed_addrs, Time now, Effects& out) {
  core_->add_seeds(seed_addrs, now, out);
}
void Swim::on_packet(const std::string& from, std::span<const std::byte> bytes, Time now, Effects& out) {
  core_->on_packet(from, bytes, now, out);
}
std::vector<std::byte> Swim::on_stream_request(const std::string& from, std::span<const std::byte> bytes, Time now,
                                               Effects& out) {
  return core_->on_stream_request(from, bytes, now, out);
}
void Swim::on_stream_response(uint64_t token, std::optional<std::span<const std::byte>> bytes, Time now, Effects& out) {
  core_->on_stream_response(token, bytes, now, out);
}
void Swim::on_stream_refused(uint64_t token, Time now, Effects& out) { core_->on_stream_refused(token, now, out); }
void Swim::hint_failed(const std::string& name, uint64_t generation, Time now, Effects& out) {
  core_->hint_failed(name, generation, now, out);
}
void Swim::vouch(std::span<const Member> members, Time now, Effects& out) { core_->vouch(members, now, out); }
void Swim::on_tick(Time now, Effects& out) { core_->on_tick(now, out); }
void Swim::leave(Time now, Effects& out) { core_->leave(now, out); }
const Identity& Swim::self() const { return core_->self(); }
std::vector<Member> Swim::members() const { return core_->table().members(); }
std::optional<Member> Swim::find(const std::string& name) const {
  const MemberRef m = core_->table().find(name);
  return m ? std::optional<Member>(m.member()) : std::nullopt;
}
const Stats& Swim::stats() const { return core_->stats(); }
int Swim::local_health() const { return core_->local_health(); }
const Config& Swim::config() const { return core_->config(); }
size_t Swim::live_count() const { return core_->table().live_count(); }
size_t Swim::queued_updates() const { return core_->queued_updates(); }

Status validate(const Config& c) {
  auto positive = [](uint32_t v) { return v > 0; };
  if (!positive(c.probe_interval_ms) || !positive(c.probe_timeout_ms) || !positive(c.indirect_timeout_ms) ||
      !positive(c.gossip_interval_ms) || !positive(c.push_pull_interval_ms) || !positive(c.join_retry_ms) ||
      !positive(c.reconnect_interval_ms) || !positive(c.stream_timeout_ms) || !positive(c.suspicion_min_ms)) {
    return fail("gossip intervals and timeouts must be positive");
  }
  if (c.nack_timeout_ms >= c.indirect_timeout_ms) {
    return fail("nack_timeout_ms (" + std::to_string(c.nack_timeout_ms) + ") must be below indirect_timeout_ms (" +
                std::to_string(c.indirect_timeout_ms) + "), or nacks arrive after the prober stopped listening");
  }
  if (c.max_packet_bytes < 256 || c.max_packet_bytes > 65000) {
    return fail("max_packet_bytes must be within 256..65000, not " + std::to_string(c.max_packet_bytes));
  }
  if (c.suspicion_max_mult < 1.0) return fail("suspicion_max_mult must be at least 1");
  return Ok{};
}

namespace {

// Received datagrams decode into one arena per thread, whose first block it keeps: decoding a
// datagram allocates nothing, and the next one starts from an empty arena. A core uses it only
// within on_packet, so the cores that one thread runs (a simulator's thousands) share it, and it
// stays in cache instead of one cold block per core.
// A full datagram (1400 bytes) decodes into about twice that; a bigger one takes more blocks.
constexpr size_t kRxBlockBytes = 8192;

struct RxArena {
  std::unique_ptr<char[]> block = std::make_unique<char[]>(kRxBlockBytes);
  google::protobuf::Arena arena;
  static google::protobuf::ArenaOptions options(char* b) {
    google::protobuf::ArenaOptions o;
    o.initial_block = b;
    o.initial_block_size = kRxBlockBytes;
    return o;
  }
  RxArena() : arena(options(block.get())) {}
};

google::protobuf::Arena& rx_arena() {
  thread_local RxArena rx;
  return rx.arena;
}

// A configuration that would make the core spin (zero intervals) is bent into one that cannot;
// validate() is where a user hears about it.
Config runnable(Config c) {
  for (uint32_t* v : {&c.probe_interval_ms, &c.probe_timeout_ms, &c.indirect_timeout_ms, &c.gossip_interval_ms,
                      &c.push_pull_interval_ms, &c.join_retry_ms, &c.reconnect_interval_ms, &c.stream_timeout_ms}) {
    *v = std::max<uint32_t>(*v, 1);
  }
  return c;
}

}  // namespace

// ---- the core: construction, entry and exit ----------------------------------------------------

SwimCore::SwimCore(Config cfg, Identity self, MemberMeta meta, uint64_t seed)
    : cfg_(runnable(std::move(cfg))),
      rng_(seed),
      table_(self, meta, Time{0}),
      health_(cfg_.awareness_max),
      queue_(cfg_.broadcast_queue_max),
      writer_(cfg_.cluster_id, self, cfg_.max_packet_bytes),
      stream_envelope_(wire::make_envelope(cfg_.cluster_id, self.name, self.generation, self.addr)),
      udp_limits_{cfg_.max_packet_bytes, cfg_.cluster_id},
      stream_limits_{cfg_.max_stream_bytes, cfg_.cluster_id} {}

void SwimCore::enter(Time now) {
  const bool stalled = wanted_wake_ && now > *wanted_wake_ + ms(cfg_.stall_threshold_ms);
  const Time lost = stalled ? now - *wanted_wake_ : Time{0};
  now_ = std::max(now_, now);
  if (stalled) recover_from_stall(lost);
}

void SwimCore::finish(Effects& out) {
  run_due();
  const Time wake = next_wake();
  if (wake != kNever) {
    out.wake_no_later_than(wake);
    wanted_wake_ = wake;
  } else {
    wanted_wake_.reset();
  }
  out_ = nullptr;
}

Time SwimCore::next_wake() const {
  Time t = kNever;
  if (!timers_.empty()) t = std::min(t, timers_.next_at());
  if (!started_) return t;
  t = std::min({t, next_probe_at_, next_push_pull_at_, next_reconnect_at_, next_reap_at_});
  if (!queue_.empty()) t = std::min(t, next_gossip_at_);
  if (!joined_) t = std::min(t, next_join_at_);
  return t;
}

void SwimCore::run_due() {
  // Bounded: a timer that re-arms itself at `now` cannot spin forever.
  for (int guard = 0; guard < 100000; ++guard) {
    if (TimerAction due; timers_.pop_due(now_, due)) {
      fire(due);
      continue;
    }
    if (!started_) return;
    if (!queue_.empty() && next_gossip_at_ <= now_) {
      next_gossip_at_ = now_ + ms(cfg_.gossip_interval_ms);
      gossip_round();
      continue;
    }
    if (next_probe_at_ <= now_) {
      start_regular_probe();
      continue;
    }
    if (!joined_ && next_join_at_ <= now_) {
      const uint32_t doublings = std::min<uint32_t>(join_attempts_++, 16);
      const uint64_t wait_ms =
          std::min<uint64_t>(uint64_t(cfg_.join_retry_ms) << doublings, std::max(cfg_.join_retry_max_ms, cfg_.join_retry_ms));
      next_join_at_ = now_ + ms(wait_ms) * static_cast<int64_t>(500 + uniform_index(rng_, 1001)) / 1000;
      send_join();
      continue;
    }
    if (next_push_pull_at_ <= now_) {
      if (joined_ && early_push_pulls_left_ > 0) {
        next_push_pull_at_ = now_ + ms(cfg_.join_retry_ms) * (4 - static_cast<int64_t>(early_push_pulls_left_--));
      } else {
        next_push_pull_at_ = now_ + push_pull_interval();
      }
      if (!leaving_ && push_pulls_in_flight_ < cfg_.push_pull_max_in_flight) {
        auto peers = pick_members(1, std::string(), true);
        if (!peers.empty()) start_push_pull(std::string(peers[0].addr()), StreamKind::push_pull);
      }
      continue;
    }
    if (next_reconnect_at_ <= now_) {
      next_reconnect_at_ = now_ + ms(cfg_.reconnect_interval_ms);
      if (!leaving_) reconnect();
      continue;
    }
    if (next_reap_at_ <= now_) {
      next_reap_at_ = now_ + std::max(ms(1000), ms(cfg_.tombstone_ttl_ms) / 10);
      std::vector<std::string> removed;
      table_.expire_tombstones(now_, ms(cfg_.tombstone_ttl_ms), removed);
      if (!removed.empty()) order_.clear();  // positions moved
      continue;
    }
    return;
  }
}

SwimCore::TimerKey SwimCore::add_timer(Time at, TimerAction action) {
  return timers_.add(at, next_token_++, std::move(action));
}

void SwimCore::fire(const TimerAction& a) {
  switch (a.kind) {
    case TimerKind::probe_direct:
      probe_direct_timeout(a.seq);
      break;
    case TimerKind::probe_end:
      if (probes_.count(a.seq) != 0) {
        ++stats_.probes_failed;
        finish_probe(a.seq, false);
      } else {
        ++stats_.stale_timers;
      }
      break;
    case TimerKind::relay_nack:
      relay_nack(a.seq);
      break;
    case TimerKind::relay_expire:
      relays_.erase(a.seq);
      break;
    case TimerKind::suspicion:
      suspicion_expired(a.name);
      break;
  }
}

// This process did not run for `lost` (paused, swapped out, starved). Timers that expired meanwhile
// measured our absence, not the silence of others: abandon the probes in flight without blaming
// their targets, drop late relays, and give every suspicion we hold back the time we were away,
// asking each suspect directly to refute.
void SwimCore::recover_from_stall(Time lost) {
  ++stats_.stalls_detected;
  health_.apply(LocalHealth::kProbeFailed);
  for (auto& [seq, p] : probes_) {
    cancel_timer(p.direct_timer);
    cancel_timer(p.end_timer);
  }
  probes_.clear();
  if (started_ && !leaving_) next_probe_at_ = std::min(next_probe_at_, now_);
  for (auto& [seq, r] : relays_) {
    cancel_timer(r.nack_timer);
    cancel_timer(r.expire_timer);
  }
  relays_.clear();
  for (auto& [name, s] : suspicions_) {
    s.timer.postpone(lost);
    reschedule_suspicion(s, name);
    if (const MemberRef m = table_.find(name); m && !m.addr().empty()) {
      send(std::string(m.addr()), update_entry(m, s.timer.accuser()), false);
    }
  }
  shoal::log::get(shoal::log::Component::gossip)
      .debug("{}: no run for {} ms: probes abandoned, suspicions postponed", self().name, lost.count() / 1000);
}

void SwimCore::log_reject(const wire::DecodeError& e, const char* what) {
  stats_.rejected.add(e.cause);
  auto& last = last_reject_log_[static_cast<size_t>(e.cause)];
  if (last && now_ - *last < ms(10000)) return;
  last = now_;
  shoal::log::get(shoal::log::Component::gossip)
      .warn("{}: refused {} ({}: {}); {} refused for this cause so far, logged at most every 10 s", self().name, what,
            wire::name(e.cause), e.detail, stats_.rejected.get(e.cause));
}

void SwimCore::note_sender(const std::string& from, const wire::MemberId& sender, MemberRef known) {
  if (known && known.generation() >= sender.generation()) {
    if (!unknown_senders_.empty()) unknown_senders_.erase(sender.name());
    return;
  }
  if (!joined_ || leaving_) return;
  auto [it, inserted] = unknown_senders_.emplace(sender.name(), now_);
  if (inserted) {
    if (unknown_senders_.size() > 64) unknown_senders_.erase(it);  // bounded; others will do
    return;
  }
  if (now_ - it->second < ms(cfg_.unknown_sender_pull_ms)) return;
  it->second = now_;  // at most one pull per interval per sender
  start_push_pull(from, StreamKind::push_pull);
}

MemberRef SwimCore::sender_record(const wire::MemberId& sender, const pb::Packet& p) const {
  if (p.has_ack()) {
    // The record a probe started from keeps its position while the layout stands, and its name;
    // its generation only grows, so it is the sender's record exactly as a lookup would find it.
    if (auto it = probes_.find(p.ack().seq()); it != probes_.end()) {
      const Probe& probe = it->second;
      if (probe.layout == table_.layout() && probe.target == sender.name() && probe.generation == sender.generation()) {
        return table_.at(probe.position);
      }
    }
  }
  return table_.find(sender.name());
}

// ---- entry points ------------------------------------------------------------------------------

void SwimCore::start(const std::vector<std::string>& seed_addrs, std::span<const Member> roster, Time now,
                     Effects& out) {
  out_ = &out;
  enter(now);
  if (started_) {
    finish(out);
    return;
  }
  started_ = true;
  table_.set_self(State::alive, table_.self().incarnation(), now_);
  emit(table_.self(), std::nullopt);
  for (const auto& a : seed_addrs) {
    if (a != self().addr && std::find(seeds_.begin(), seeds_.end(), a) == seeds_.end()) seeds_.push_back(a);
  }
  broadcast(table_.self(), std::string());
  // Spread the first probe and push-pull over one interval, so members started together do not
  // probe in lockstep.
  next_probe_at_ = now_ + ms(cfg_.probe_interval_ms) * static_cast<int64_t>(uniform_index(rng_, 1000)) / 1000;
  next_gossip_at_ = now_;
  next_push_pull_at_ = now_ + push_pull_interval() * static_cast<int64_t>(500 + uniform_index(rng_, 1000)) / 1000;
  next_reconnect_at_ = now_ + ms(cfg_.reconnect_interval_ms);
  next_reap_at_ = now_ + std::max(ms(1000), ms(cfg_.tombstone_ttl_ms) / 10);
  if (!roster.empty()) {
    merging_join_ = true;  // everyone was handed the same roster: nothing in it is news to others
    table_.reserve(table_.size() + roster.size());
    for (const Member& m : roster) {
      // Unusable entries are skipped, as valid() skips them in a received state.
      const bool usable = !m.id.name.empty() && m.id.generation != 0 && (m.state != State::alive || !m.id.addr.empty());
      if (!usable || m.id.name == self().name) continue;
      handle_claim(Claim{m.id, m.state, m.incarnation, m.meta, {}}, std::string(), true);
    }
    merging_join_ = false;
    early_push_pulls_left_ = 0;
  }
  if (seeds_.empty() || !roster.empty()) {
    joined_ = true;
  } else {
    next_join_at_ = now_ + ms(cfg_.join_retry_ms);
    send_join();
  }
  finish(out);
}

void SwimCore::add_seeds(const std::vector<std::string>& seed_addrs, Time now, Effects& out) {
  out_ = &out;
  enter(now);
  const size_t before = seeds_.size();
  for (const auto& a : seed_addrs) {
    if (a != self().addr && std::find(seeds_.begin(), seeds_.end(), a) == seeds_.end()) seeds_.push_back(a);
  }
  if (seeds_.size() != before) {
    reconnect_scan_.reset();
    // Not joined yet, or started alone (every seed was unknown then): join through the new ones now.
    if (started_ && !leaving_ && (!joined_ || table_.live_count() <= 1)) {
      joined_ = false;
      join_attempts_ = 0;
      join_cursor_ = before;  // the new ones first
      next_join_at_ = now_ + ms(cfg_.join_retry_ms);
      send_join();
    }
  }
  finish(out);
}

void SwimCore::on_tick(Time now, Effects& out) {
  out_ = &out;
  enter(now);
  finish(out);
}

void SwimCore::on_packet(const std::string& from, std::span<const std::byte> bytes, Time now, Effects& out) {
  out_ = &out;
  enter(now);
  ++stats_.packets_in;
  stats_.bytes_in += bytes.size();
  google::protobuf::Arena& arena = rx_arena();
  arena.Reset();  // what the previous datagram decoded into
  auto* env = google::protobuf::Arena::CreateMessage<wire::Envelope>(&arena);
  auto* packet = google::protobuf::Arena::CreateMessage<pb::Packet>(&arena);
  if (auto e = wire::decode_packet_into(bytes, udp_limits_, *env)) {
    log_reject(*e, "a packet");
    finish(out);
    return;
  }
  if (auto e = decode_gossip_into(*env, *packet)) {
    log_reject(*e, "a packet");
    finish(out);
    return;
  }
  const pb::Packet& p = *packet;
  const std::string& sender = env->sender().name();
  if (sender == self().name && env->sender().generation() == self().generation) {
    finish(out);  // our own packet looped back: nothing to learn
    return;
  }
  if (started_) {
    // Updates first: a ping that carries a suspicion of us is answered after we refuted it.
    corrected_ = false;
    accused_in_packet_ = false;
    for (const auto& u : p.updates()) handle_update(u, from);
    const MemberRef known = sender_record(env->sender(), p);
    note_sender(from, env->sender(), known);
    if (p.has_ping()) on_ping(from, env->sender(), p.ping(), known);
    if (p.has_ping_req()) on_ping_req(from, p.ping_req());
    if (p.has_ack()) on_ack(*env, p.ack().seq());
    if (p.has_nack()) on_nack(p.nack().seq());
  }
  finish(out);
}

}  // namespace shoal::gossip

// What this member does with claims: applies them to its table by SWIM precedence, runs the
// suspicion timers, refutes claims about itself, accuses members its probes could not reach, and
// spreads every change by piggyback and by the gossip timer.
#include "base/log.hpp"
#include "gossip/swim_core.hpp"

namespace shoal::gossip {

bool SwimCore::worth_correcting(MemberRef record, State claimed) const {
  const bool accusation = claimed == State::suspect || claimed == State::dead;
  return (accusation && is_live(record.state())) || (claimed == State::alive && !is_live(record.state()));
}

void SwimCore::handle_update(const pb::Update& u, const std::string& from_addr) {
  if (u.name() != self().name) {
    if (const MemberRef m = table_.find(u.name()); m) {
      const State claimed = state_of(u.state());
      const Verdict v = judge(m, claimed, u.generation(), u.incarnation());
      if (v == Verdict::same && claimed != State::suspect) return;
      if (v == Verdict::stale && (corrected_ || from_addr.empty() || !worth_correcting(m, claimed))) return;
    }
  }
  handle_claim(from_proto(u), from_addr, false);
}

void SwimCore::handle_claim(const Claim& c, const std::string& from_addr, bool from_state) {
  if (c.id.name == self().name) {
    handle_self_claim(c, from_addr);
    return;
  }
  const MemberRef before = table_.find(c.id.name);
  const bool was_live = before && is_live(before.state());
  const auto outcome = table_.apply(c, now_);
  switch (outcome.verdict) {
    case Verdict::replace: {
      ++stats_.updates_applied;
      const MemberRef m = outcome.member;
      const std::string name(m.name());
      emit(m, outcome.previous);
      if (m.state() == State::suspect) {
        start_suspicion(m, c.accuser);
        if (c.refused) note_refusal(name, suspicions_.find(name)->second, c.accuser);
      } else if (auto s = suspicions_.find(name); s != suspicions_.end()) {
        cancel_timer(s->second.key);
        suspicions_.erase(s);
      }
      if (is_live(m.state()) && !was_live) order_.add(m.position(), rng_);
      // A joining member learns the whole table from its seed: everyone has that already.
      if (!merging_join_) broadcast(m, c.accuser, c.refused);
      if (m.state() == State::suspect && c.refused && c.accuser != self().name) {
        check_refusal(m);
      } else if (m.state() == State::suspect && c.accuser != self().name) {
        // Ask a few members (each with probability p) to check the suspect now: their
        // confirmations shorten the suspicion instead of waiting for the round-robin.
        const size_t others = table_.live_count() > 2 ? table_.live_count() - 2 : 1;
        const uint64_t p_millionths =
            std::min<uint64_t>(1000000, uint64_t{cfg_.confirmation_probes} * 1000000 / others);
        if (!leaving_ && uniform_index(rng_, 1000000) < p_millionths) {
          if (!probe_running(name)) start_probe(m, false);
        }
      }
      break;
    }
    case Verdict::same:
      if (c.state == State::suspect) {
        auto s = suspicions_.find(c.id.name);
        if (s != suspicions_.end()) {
          bool news = s->second.timer.confirm(c.accuser);
          if (news) ++stats_.confirmations;
          const bool first_refusal = c.refused && s->second.timer.refusals() == 0 && !s->second.timer.self_refused();
          if (c.refused && note_refusal(s->first, s->second, c.accuser)) news = true;
          if (news) {
            reschedule_suspicion(s->second, c.id.name);
            broadcast(outcome.member, c.accuser, c.refused);
          }
          // The first word of a refusal about a suspect we already held: check it ourselves.
          if (first_refusal && c.accuser != self().name) check_refusal(outcome.member);
        }
      }
      break;
    case Verdict::raise_only:
      break;
    case Verdict::stale: {
      // The sender is behind. Tell it what we know when that matters: an accusation of a member
      // that has refuted it, or an alive of one we hold dead (perhaps the member itself, back from
      // a pause). One such answer per packet.
      const MemberRef m = outcome.member;
      if (!m || from_addr.empty() || corrected_ || from_state) break;
      if (worth_correcting(m, c.state)) {
        corrected_ = true;
        auto s = suspicions_.find(m.name());
        send(from_addr, update_entry(m, s != suspicions_.end() ? s->second.timer.accuser() : self().name), false);
      }
      break;
    }
  }
}

void SwimCore::handle_self_claim(const Claim& c, const std::string& from_addr) {
  const MemberRef me = table_.self();
  if (leaving_ || c.id.generation < me.generation()) return;  // news about an earlier life of ours
  if (c.id.generation > me.generation()) {
    if (!last_name_clash_log_ || now_ - *last_name_clash_log_ >= ms(10000)) {
      last_name_clash_log_ = now_;
      shoal::log::get(shoal::log::Component::gossip)
          .warn("{}: another member claims our name with a newer generation ({} > {}): two members with one name?",
                self().name, c.id.generation, me.generation());
    }
    return;
  }
  const bool accused = c.state != State::alive;
  if (accused) accused_in_packet_ = true;
  if (accused ? c.incarnation >= me.incarnation() : c.incarnation > me.incarnation()) {
    refute(c.incarnation, c.accuser, from_addr);
  } else if (accused && !corrected_) {
    // A stale accusation (an older incarnation than ours): whoever passed it on, and its accuser,
    // missed our refutation, and under loss may hold us dead until their suspicion timers run out
    // (a small cluster has few members to relay the refutation, and each relays it only a few
    // times). Tell both directly; no new incarnation is needed.
    corrected_ = true;
    answer_accusation(c.accuser, from_addr);
  }
}

void SwimCore::answer_accusation(const std::string& accuser, const std::string& from_addr) {
  const MemberRef me = table_.self();
  std::string accuser_addr;
  if (const MemberRef a = table_.find(accuser); a && !a.is_self()) accuser_addr = a.addr();
  if (!accuser_addr.empty()) send(accuser_addr, update_entry(me, {}), false);
  if (!from_addr.empty() && from_addr != accuser_addr && from_addr != self().addr) {
    send(from_addr, update_entry(me, {}), false);
  }
}

void SwimCore::refute(uint64_t seen_incarnation, const std::string& accuser, const std::string& from_addr) {
  const uint64_t inc = std::max(seen_incarnation, table_.self().incarnation()) + 1;
  table_.set_self(State::alive, inc, now_);
  health_.apply(LocalHealth::kRefuted);
  ++stats_.refutations;
  emit(table_.self(), State::alive);
  broadcast(table_.self(), {});
  // The accuser's timer runs first, and the member that told us holds the suspicion too: answer
  // both directly.
  answer_accusation(accuser, from_addr);
}

void SwimCore::accuse(const std::string& name, bool refused) {
  MemberRef m = table_.find(name);
  if (!m || !is_live(m.state())) return;
  const bool fresh = m.state() == State::alive;
  if (fresh) ++stats_.suspicions_raised;
  handle_claim(Claim{m.identity(), State::suspect, m.incarnation(), {}, self().name, refused}, std::string(), false);
  // Buddy system: tell the suspect itself at once; it refutes if it is alive.
  m = table_.find(name);
  if (fresh && m && m.state() == State::suspect) {
    send(std::string(m.addr()), update_entry(m, self().name, refused), false);
  }
}

void SwimCore::start_suspicion(MemberRef m, const std::string& accuser) {
  if (auto old = suspicions_.find(m.name()); old != suspicions_.end()) {
    cancel_timer(old->second.key);
    suspicions_.erase(old);
  }
  const auto bounds = bounds_now();
  auto [it, inserted] = suspicions_.emplace(
      std::string(m.name()), Suspicion{SuspicionTimer(now_, bounds, accuser), m.generation(), m.incarnation(), TimerKey{}});
  it->second.key = add_timer(it->second.timer.deadline(), TimerAction{TimerKind::suspicion, 0, it->first});
}

void SwimCore::reschedule_suspicion(Suspicion& s, const std::string& name) {
  cancel_timer(s.key);
  s.key = add_timer(std::max(now_, s.timer.deadline()), TimerAction{TimerKind::suspicion, 0, name});
}

void SwimCore::suspicion_expired(const std::string& name) {
  auto it = suspicions_.find(name);
  if (it == suspicions_.end()) {
    ++stats_.stale_timers;
    return;
  }
  const MemberRef m = table_.find(name);
  if (!m || m.state() != State::suspect || m.generation() != it->second.generation ||
      m.incarnation() != it->second.incarnation) {
    suspicions_.erase(it);
    ++stats_.stale_timers;
    return;
  }
  const bool refused = it->second.timer.refusal_confirmed();
  if (!refused && verify_before_death(it->second, m)) return;
  const Suspicion s = std::move(it->second);
  suspicions_.erase(it);
  ++stats_.deaths_declared;
  if (refused) ++stats_.deaths_on_refusal;
  shoal::log::get(shoal::log::Component::gossip)
      .debug("{}: {} declared dead after {} confirmations{}", self().name, name, s.timer.confirmations(),
             refused ? fmt::format(" (refused here and at {} others)", s.timer.refusals()) : std::string());
  handle_claim(Claim{m.identity(), State::dead, m.incarnation(), {}, self().name, refused}, std::string(), false);
}

// A suspicion that nobody but its accuser vouches for is what a lost refutation looks like: the
// suspect refuted, but under loss neither its broadcast nor the few relays of a small cluster
// reached us. Before declaring such a member dead, probe it once ourselves. The ping carries the
// suspicion, so a live suspect answers with its current record (and refutes if it had not yet); a
// failed probe confirms the suspicion and the member is declared dead at once. A crashed member
// draws confirmations from its other probers, so this costs its detection nothing at scale; with
// fewer than K + 2 members (no confirmations possible) it adds one probe to the detection.
bool SwimCore::verify_before_death(Suspicion& s, MemberRef m) {
  if (s.checked || s.timer.confirmations() > 0 || s.timer.accuser() == self().name || leaving_) return false;
  s.checked = true;
  ++stats_.suspicions_verified;
  if (!probe_running(m.name())) start_probe(m, false);
  // The probe's whole window, then as long again for its answer to arrive.
  const Time window = health_.scale(ms(cfg_.probe_timeout_ms) + ms(cfg_.indirect_timeout_ms)) * 2;
  cancel_timer(s.key);
  s.key = add_timer(now_ + window, TimerAction{TimerKind::suspicion, 0, std::string(m.name())});
  return true;
}

void SwimCore::emit(MemberRef m, std::optional<State> previous) {
  if (out_ != nullptr) out_->events.push_back(MemberEvent{m.member(), previous});
}

std::string SwimCore::update_entry(MemberRef m, std::string_view accuser, bool refused) const {
  pb::Update u;
  to_proto(m, accuser, u, refused);
  return encode_update_entry(u);
}

void SwimCore::broadcast(MemberRef m, std::string_view accuser, bool refused) {
  queue_.push(std::string(m.name()), update_entry(m, accuser, refused));
  stats_.broadcasts_dropped = queue_.dropped();
}

uint32_t SwimCore::retransmit_limit() const {
  const double n = static_cast<double>(table_.live_count());
  const auto scale = static_cast<uint32_t>(std::ceil(std::log10(n + 1.0)));
  return std::max<uint32_t>(1, cfg_.retransmit_mult * std::max<uint32_t>(1, scale));
}

void SwimCore::gossip_round() {
  for (const MemberRef m : pick_members(cfg_.gossip_fanout, {}, false)) {
    std::string body;
    if (queue_.fill(body, writer_.body_budget(), retransmit_limit()) == 0) break;
    ++stats_.gossip_packets_sent;
    send(std::string(m.addr()), std::move(body), false);
  }
}

void SwimCore::send(const std::string& to, std::string body, bool piggyback) {
  if (out_ == nullptr || to.empty()) return;
  if (piggyback && !queue_.empty()) queue_.fill(body, writer_.body_budget(), retransmit_limit());
  if (body.size() > writer_.body_budget()) {
    log_reject(wire::DecodeError{wire::RejectCause::oversized,
                                 "outgoing gossip body of " + std::to_string(body.size()) + " bytes"},
               "to send a packet");
    return;
  }
  auto bytes = writer_.finish(body);
  ++stats_.packets_out;
  stats_.bytes_out += bytes.size();
  out_->packets.push_back(SendPacket{to, std::move(bytes)});
}

void SwimCore::leave(Time now, Effects& out) {
  out_ = &out;
  enter(now);
  if (!started_ || leaving_) {
    finish(out);
    return;
  }
  leaving_ = true;
  table_.set_self(State::left, table_.self().incarnation(), now_);
  emit(table_.self(), State::alive);
  for (auto& [seq, p] : probes_) {
    cancel_timer(p.direct_timer);
    cancel_timer(p.end_timer);
  }
  probes_.clear();
  next_probe_at_ = kNever;
  next_push_pull_at_ = kNever;
  next_reconnect_at_ = kNever;
  broadcast(table_.self(), {});
  // Tell a handful of members directly, so that the news does not wait for the gossip timer.
  const std::string entry = update_entry(table_.self(), {});
  for (const MemberRef m : pick_members(std::max<uint32_t>(cfg_.gossip_fanout, 8), {}, false)) {
    send(std::string(m.addr()), entry, false);
  }
  // Members that left moments before us still linger (as acceptors of the next view) until they know
  // the rest are gone too, as at the end of a job: the live-only picks above never reach them.
  constexpr size_t kTellRecentLeavers = 64;
  const Time kRecentLeave = ms(10000);
  size_t told = 0;
  for (uint32_t i = 1; i < table_.size() && told < kTellRecentLeavers; ++i) {  // [0] is self
    const MemberRef m = table_.at(i);
    if (m.state() == State::left && !m.addr().empty() && now_ - m.state_since() <= kRecentLeave) {
      send(std::string(m.addr()), entry, false);
      ++told;
    }
  }
  next_gossip_at_ = now_ + ms(cfg_.gossip_interval_ms);
  finish(out);
}

}  // namespace shoal::gossip

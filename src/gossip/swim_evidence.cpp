// Evidence from the data plane: hints (a trainer's connection to a member broke: probe it at once)
// and the refusal rule (a member's own agent port refused us and others: it may die below the
// normal suspicion floor). The rule is stated in README.md, "Evidence from the data plane". And the
// evidence of a committed view: members it holds that gossip has not told this member of yet (vouch).
#include <algorithm>

#include "base/log.hpp"
#include "gossip/swim_core.hpp"

namespace shoal::gossip {

SuspicionBounds SwimCore::bounds_now() const {
  const size_t n = table_.live_count();
  SuspicionBounds b =
      suspicion_bounds(ms(cfg_.suspicion_min_ms), cfg_.suspicion_max_mult, cfg_.suspicion_confirmations, n);
  b.refused_min = ms(cfg_.refused_suspicion_ms);
  b.refused_k = refusal_confirmations_needed(cfg_.refusal_confirmations, n);
  return b;
}

void SwimCore::hint_failed(const std::string& name, uint64_t generation, Time now, Effects& out) {
  out_ = &out;
  enter(now);
  const MemberRef m = table_.find(name);
  const bool probeable = started_ && !leaving_ && m && !m.is_self() && m.generation() == generation &&
                         is_live(m.state()) && !m.addr().empty();
  auto last = hinted_.find(name);
  const bool recent = last != hinted_.end() && now_ - last->second < ms(cfg_.hint_interval_ms);
  const auto running = std::find_if(probes_.begin(), probes_.end(), [&](const auto& p) { return p.second.target == name; });
  if (!probeable || recent || (running != probes_.end() && running->second.indirect_sent)) {
    ++stats_.hints_ignored;
    finish(out);
    return;
  }
  if (hinted_.size() >= kMaxHinted) {
    // Forget the hints that no longer hold anything back (bounded whatever the callers do).
    std::erase_if(hinted_, [&](const auto& e) { return now_ - e.second >= ms(cfg_.hint_interval_ms); });
    if (hinted_.size() >= kMaxHinted) hinted_.erase(hinted_.begin());
  }
  hinted_[name] = now_;
  ++stats_.hints;
  shoal::log::get(shoal::log::Component::gossip)
      .debug("{}: a connection to {} broke: probing it now", self().name, name);
  // A probe of it in its direct phase goes on to the indirect one now; else a new one, escalated at once.
  escalate_probe(running != probes_.end() ? running->first : start_probe(m, false));
  finish(out);
}

void SwimCore::vouch(std::span<const Member> members, Time now, Effects& out) {
  out_ = &out;
  enter(now);
  if (!started_ || leaving_) {
    finish(out);
    return;
  }
  merging_join_ = true;  // what a view holds is no news to the members that committed it
  for (const Member& m : members) {
    if (m.id.name.empty() || m.id.generation == 0 || m.id.addr.empty() || m.id.name == self().name) continue;
    const MemberRef known = table_.find(m.id.name);
    if (known && known.generation() >= m.id.generation) continue;
    shoal::log::get(shoal::log::Component::gossip)
        .info("{}: member {} is in a committed view but its news has not reached here yet: taken as alive, and "
              "probed from now on",
              self().name, m.id.name);
    handle_claim(Claim{m.id, State::alive, 0, m.meta, {}}, std::string(), true);
  }
  merging_join_ = false;
  finish(out);
}

void SwimCore::on_stream_refused(uint64_t token, Time now, Effects& out) {
  auto it = streams_.find(token);
  if (it == streams_.end() || it->second.kind != StreamKind::fallback_probe) {
    on_stream_response(token, std::nullopt, now, out);  // no evidence about a member: the usual failure
    return;
  }
  out_ = &out;
  enter(now);
  const PendingStream ps = it->second;
  streams_.erase(it);
  probe_refused(ps.seq);
  finish(out);
}

void SwimCore::probe_refused(uint32_t seq) {
  auto it = probes_.find(seq);
  if (it == probes_.end()) {
    ++stats_.stale_timers;
    return;
  }
  Probe& p = it->second;
  const MemberRef m = table_.find(p.target);
  if (!m || m.generation() != p.generation || !is_live(m.state()) || m.addr() != p.addr) return;
  ++stats_.refusals_seen;
  p.refused = true;
  // Suspected at once, with the evidence; the probe itself runs on: a helper's or the member's own
  // ack still ends it as answered, and an answer voids the refusal (suspect_answered).
  accuse(p.target, true);
}

bool SwimCore::note_refusal(const std::string& name, Suspicion& s, const std::string& who) {
  const bool mine = who == self().name;
  const bool news = mine ? s.timer.saw_refusal() : s.timer.confirm_refusal(who);
  if (!news) return false;
  if (!mine) ++stats_.refusal_confirmations;
  // Our own refusal goes out now, not at the next gossip tick: the members counting refusals wait for it.
  if (mine) next_gossip_at_ = std::min(next_gossip_at_, now_);
  reschedule_suspicion(s, name);
  return true;
}

void SwimCore::suspect_answered(std::string_view name, uint64_t generation, const std::string& how) {
  auto s = suspicions_.find(name);
  if (s == suspicions_.end() || s->second.generation != generation) return;
  Suspicion& sus = s->second;
  if (sus.timer.answered_already() || (!sus.timer.self_refused() && sus.timer.refusals() == 0)) return;
  sus.timer.answered();
  ++stats_.refusals_void;
  shoal::log::get(shoal::log::Component::gossip)
      .debug("{}: suspect {} answered ({}) after refusing a connection: its refusals no longer count", self().name,
             name, how);
  reschedule_suspicion(sus, s->first);
}

void SwimCore::check_refusal(MemberRef m) {
  if (leaving_ || probe_running(m.name())) return;
  const size_t others = table_.live_count() > 2 ? table_.live_count() - 2 : 1;
  const uint64_t p_millionths = std::min<uint64_t>(1000000, uint64_t{cfg_.confirmation_probes} * 1000000 / others);
  if (uniform_index(rng_, 1000000) >= p_millionths) return;
  escalate_probe(start_probe(m, false));
}

}  // namespace shoal::gossip

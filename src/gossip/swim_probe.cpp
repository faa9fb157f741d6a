// Probing: the round-robin probe and confirmation probes (direct ping, then ping-reqs through k
// helpers and a TCP ping in parallel), the answers to others' pings, and the relays we run as a
// helper (forwarding acks, sending Lifeguard's nacks).
#include <algorithm>

#include "gossip/swim_core.hpp"

namespace shoal::gossip {

std::vector<MemberRef> SwimCore::pick_members(size_t k, std::string_view exclude, bool alive_only) {
  std::vector<MemberRef> chosen;
  const auto size = static_cast<uint32_t>(table_.size());
  if (k == 0 || size < 2) return chosen;
  auto wanted = [&](uint32_t i) {
    const StoredRecord& r = table_.row(i);
    if (alive_only ? r.state != State::alive : !is_live(r.state)) return false;
    return r.addr_len != 0 && std::string_view(r.text, r.name_len) != exclude;
  };
  auto picked = [&](uint32_t i, size_t among) {
    const auto end = chosen.begin() + static_cast<std::ptrdiff_t>(among);
    return std::find_if(chosen.begin(), end, [&](MemberRef m) { return m.position() == i; }) != end;
  };
  // Random draws first: O(k) when most records are live, which is the common case at any size.
  for (size_t attempt = 0; attempt < 4 * k + 8 && chosen.size() < k; ++attempt) {
    const auto i = static_cast<uint32_t>(1 + uniform_index(rng_, size - 1));  // [0] is self
    if (wanted(i) && !picked(i, chosen.size())) chosen.push_back(table_.at(i));
  }
  if (chosen.size() == k) return chosen;
  // Few eligible members: reservoir sampling over the rest of the table.
  const size_t drawn = chosen.size();
  size_t seen = 0;
  for (uint32_t i = 1; i < size; ++i) {
    if (picked(i, drawn) || !wanted(i)) continue;
    ++seen;
    if (chosen.size() < k) {
      chosen.push_back(table_.at(i));
    } else if (size_t j = uniform_index(rng_, seen); j < k - drawn) {
      chosen[drawn + j] = table_.at(i);
    }
  }
  return chosen;
}

void SwimCore::start_regular_probe() {
  next_probe_at_ = now_ + health_.scale(ms(cfg_.probe_interval_ms));
  if (leaving_) {
    next_probe_at_ = kNever;
    return;
  }
  auto probeable = [&](uint32_t i) {
    const StoredRecord& r = table_.row(i);
    return is_live(r.state) && r.addr_len != 0;
  };
  auto target = order_.next(
      [&](ProbeOrder::Slot i) { return i != 0 && i < table_.size() && probeable(i); },  // [0] is self
      [&] {
        std::vector<ProbeOrder::Slot> slots;
        slots.reserve(table_.live_count());
        for (uint32_t i = 1; i < table_.size(); ++i) {
          if (probeable(i)) slots.push_back(i);
        }
        return slots;
      },
      rng_);
  if (!target) return;
  const MemberRef m = table_.at(*target);
  if (probe_running(m.name())) return;  // a confirmation probe of it is running already
  start_probe(m, true);
}

bool SwimCore::probe_running(std::string_view name) const {
  return std::any_of(probes_.begin(), probes_.end(), [&](const auto& entry) { return entry.second.target == name; });
}

uint32_t SwimCore::start_probe(MemberRef target, bool regular) {
  const uint32_t seq = next_seq_++;
  Probe p;
  p.target = target.name();
  p.generation = target.generation();
  p.addr = target.addr();
  p.regular = regular;
  p.started = now_;
  p.position = target.position();
  p.layout = table_.layout();
  const Time direct = health_.scale(ms(cfg_.probe_timeout_ms));
  const Time indirect = health_.scale(ms(cfg_.indirect_timeout_ms));
  p.direct_timer = add_timer(now_ + direct, TimerAction{TimerKind::probe_direct, seq, {}});
  p.end_timer = add_timer(now_ + direct + indirect, TimerAction{TimerKind::probe_end, seq, {}});
  if (regular) {
    next_probe_at_ = std::max(next_probe_at_, now_ + direct + indirect);
  }
  const std::string addr = p.addr;
  std::string body = direct_ping_body(seq, target, p.generation);
  probes_.emplace(seq, std::move(p));
  ++stats_.probes_sent;
  send(addr, std::move(body));
  return seq;
}

void SwimCore::escalate_probe(uint32_t seq) {
  auto it = probes_.find(seq);
  if (it == probes_.end() || it->second.indirect_sent) return;
  cancel_timer(it->second.direct_timer);
  probe_direct_timeout(seq);
}

std::string SwimCore::direct_ping_body(uint32_t seq, MemberRef target, uint64_t generation) const {
  std::string body = ping_body(seq);
  // Lifeguard's buddy system: a suspect learns of the suspicion from the ping itself (and, if it
  // refuted already, answers us directly: we missed its refutation).
  if (target && target.generation() == generation && target.state() == State::suspect) {
    auto s = suspicions_.find(target.name());
    body += update_entry(target, s != suspicions_.end() ? s->second.timer.accuser() : self().name);
  }
  return body;
}

void SwimCore::probe_direct_timeout(uint32_t seq) {
  auto it = probes_.find(seq);
  if (it == probes_.end()) {
    ++stats_.stale_timers;
    return;
  }
  Probe& p = it->second;
  if (p.indirect_sent) return;  // escalated already
  p.indirect_sent = true;
  const Identity target{p.target, p.generation, p.addr};
  // Ping once more ourselves: at 10% loss a second try turns one in five failed direct probes
  // into one in twenty-five, for one datagram.
  send(p.addr, direct_ping_body(seq, table_.find(p.target), p.generation));
  for (const MemberRef h : pick_members(cfg_.indirect_checks, p.target, true)) {
    p.helpers.emplace_back(h.name());
    ++stats_.indirect_probes_sent;
    send(std::string(h.addr()), ping_req_body(seq, target));
  }
  if (cfg_.fallback_probe) {
    pb::StreamRequest req;
    req.mutable_ping()->set_seq(seq);
    ++stats_.fallback_probes_sent;
    request(p.addr, req, StreamKind::fallback_probe, seq, p.end_timer.at);
  }
}

void SwimCore::finish_probe(uint32_t seq, bool acked) {
  auto it = probes_.find(seq);
  if (it == probes_.end()) return;
  Probe p = std::move(it->second);
  probes_.erase(it);
  cancel_timer(p.direct_timer);
  cancel_timer(p.end_timer);
  if (p.regular) {
    if (acked) {
      health_.apply(LocalHealth::kProbeSucceeded);
    } else {
      health_.apply(LocalHealth::kProbeFailed);
      // Helpers that stayed silent suggest that our own network is the problem.
      if (p.indirect_sent && p.nacks < p.helpers.size()) health_.apply(LocalHealth::kMissedNack);
    }
  }
  if (acked) {
    ++stats_.acks_received;
    stats_.record_probe_rtt(now_ - p.started);
    // A member that answers a probe stays.
    suspect_answered(p.target, p.generation,
                     "an ack to a probe started " + std::to_string((now_ - p.started).count() / 1000) + " ms ago");
    return;
  }
  const MemberRef m = table_.find(p.target);
  if (m && m.generation() == p.generation && is_live(m.state())) accuse(p.target, p.refused);
}

void SwimCore::on_ping(const std::string& from, const wire::MemberId& sender, const pb::Ping& ping,
                       MemberRef known) {
  std::string body = ack_body(ping.seq());
  if (known && known.state() == State::suspect) suspect_answered(known.name(), sender.generation(), "a ping from it");
  // A member we hold as suspect or dead is told so at once, so that it refutes (an accused
  // member that pings us is alive, or paused and back).
  if (known && known.generation() == sender.generation() && known.state() != State::alive &&
      known.state() != State::left) {
    auto s = suspicions_.find(known.name());
    body += update_entry(known, s != suspicions_.end() ? s->second.timer.accuser() : self().name);
  }
  // The ping accused us (the buddy system): the ack carries our record, refuted or current, so a
  // prober that missed our refutation learns it from the answer it is waiting for.
  if (accused_in_packet_) body += update_entry(table_.self(), std::string());
  send(from, std::move(body));
}

void SwimCore::on_ping_req(const std::string& from, const pb::PingReq& req) {
  if (leaving_ || req.target() == self().name) return;
  const uint32_t seq = next_seq_++;
  Relay r;
  r.prober_addr = from;
  r.prober_seq = req.seq();
  r.target = req.target();
  r.generation = req.target_generation();
  const Time nack_after = ms(cfg_.nack_timeout_ms);
  r.nack_timer = add_timer(now_ + nack_after, TimerAction{TimerKind::relay_nack, seq, {}});
  // Keep forwarding a late ack while the prober may still be waiting for it.
  r.expire_timer =
      add_timer(now_ + nack_after + ms(cfg_.indirect_timeout_ms), TimerAction{TimerKind::relay_expire, seq, {}});
  relays_.emplace(seq, std::move(r));
  ++stats_.relayed_pings;
  send(req.target_addr(), ping_body(seq));
}

void SwimCore::relay_nack(uint32_t seq) {
  auto it = relays_.find(seq);
  if (it == relays_.end()) {
    ++stats_.stale_timers;
    return;
  }
  it->second.nacked = true;
  ++stats_.nacks_sent;
  send(it->second.prober_addr, nack_body(it->second.prober_seq));
}

void SwimCore::on_ack(const wire::Envelope& env, uint32_t seq) {
  const auto& sender = env.sender();
  if (auto it = probes_.find(seq); it != probes_.end()) {
    const Probe& p = it->second;
    const bool from_target = sender.name() == p.target && sender.generation() == p.generation;
    const bool from_helper =
        p.indirect_sent && std::find(p.helpers.begin(), p.helpers.end(), sender.name()) != p.helpers.end();
    if (from_target || from_helper) {
      if (from_helper && !from_target) ++stats_.indirect_acks;
      finish_probe(seq, true);
      return;
    }
  }
  if (auto it = relays_.find(seq); it != relays_.end()) {
    Relay& r = it->second;
    if (sender.name() == r.target && sender.generation() == r.generation) {
      const std::string to = r.prober_addr;
      const uint32_t prober_seq = r.prober_seq;
      cancel_timer(r.nack_timer);
      cancel_timer(r.expire_timer);
      relays_.erase(it);
      send(to, ack_body(prober_seq));
      return;
    }
  }
  ++stats_.stale_acks;
}

void SwimCore::on_nack(uint32_t seq) {
  auto it = probes_.find(seq);
  if (it == probes_.end()) return;
  ++it->second.nacks;
  ++stats_.nacks_received;
}

}  // namespace shoal::gossip

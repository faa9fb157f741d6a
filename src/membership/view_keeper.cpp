// ViewKeeper, proposer side: deciding when a change is due, running rounds, committing, installing.
#include "membership/view_keeper.hpp"

#include "base/log.hpp"
#include "membership/view_codec.hpp"

namespace shoal::membership {

const char* to_string(KeeperPhase p) {
  switch (p) {
    case KeeperPhase::forming: return "forming";
    case KeeperPhase::stable: return "stable";
    case KeeperPhase::proposing: return "proposing";
    case KeeperPhase::stalled: return "stalled";
  }
  return "?";
}

ViewKeeper::ViewKeeper(Config cfg, gossip::Identity self, uint64_t seed)
    : cfg_(std::move(cfg)),
      self_(std::move(self)),
      rng_(seed),
      damper_(Escalation{cfg_.hold_down_max, cfg_.failures_forgotten}),
      eviction_(cfg_.eviction) {
  acceptor_.reset(1);
  status_.reason = "forming: no view yet";
}

void ViewKeeper::on_members(std::vector<gossip::Member> members, Time now, KeeperOutput& out) {
  gossip_ = std::move(members);
  reindex();
  damper_.observe(gossip_, now);
  for (auto it = undelivered_.begin(); it != undelivered_.end();) {
    if (live_by_name(it->first)) {
      send_commit(it->first, it->second, view_, true, 0, now, out);
      it = undelivered_.erase(it);
    } else {
      ++it;
    }
  }
  evaluate(now, out);
}

void ViewKeeper::reindex() {
  bool prefix = gossip_.size() >= index_names_.size();
  for (size_t i = 0; prefix && i < index_names_.size(); ++i) prefix = gossip_[i].id.name == index_names_[i];
  if (!prefix) {
    gossip_index_.clear();
    index_names_.clear();
  }
  for (size_t i = index_names_.size(); i < gossip_.size(); ++i) {
    index_names_.push_back(gossip_[i].id.name);
    gossip_index_.emplace(index_names_.back(), i);
  }
}

void ViewKeeper::on_tick(Time now, KeeperOutput& out) {
  if (round_ && now >= round_deadline_) fail_round(now, "phase timed out waiting for " + round_->waiting_for());
  if (catch_up_ && now >= catch_up_->deadline) finish_catch_up(now, out);
  if (!catch_up_ && behind_hint_ > view_.epoch() && now >= catch_up_after_) start_catch_up(now, out);
  while (!commit_retries_.empty() && commit_retries_.begin()->first <= now) {
    Pending p = commit_retries_.begin()->second;
    commit_retries_.erase(commit_retries_.begin());
    if (p.commit_epoch == view_.epoch()) send_commit(p.name, p.addr, view_, true, p.attempts, now, out);
  }
  evaluate(now, out);
}

void ViewKeeper::on_verdict(uint64_t epoch, const std::vector<std::string>& named, uint64_t step, Time now,
                            KeeperOutput& out) {
  if (!eviction_.enabled()) return;
  eviction_.on_verdict(epoch, named, step, view_.epoch(), now);
  evaluate(now, out);
}

Status ViewKeeper::force(Time now, KeeperOutput& out) {
  if (view_.epoch() == 0) return fail("no view has been committed yet: there is nothing to override");
  const Desired d = desired_view(view_, gossip_, damper_, cfg_, now, std::nullopt, installed_at_, &gossip_index_);
  if (!d.differs) return fail("the committed view already matches the live members: nothing to force");
  if (d.members.size() < std::max<uint32_t>(cfg_.min_hosts, 1)) {
    return fail("only " + std::to_string(d.members.size()) + " members alive, below --min-hosts " +
                std::to_string(cfg_.min_hosts));
  }
  log::membership().warn("operator forces the next view without a majority of epoch {} ({} of {} members alive)",
                         view_.epoch(), d.live_of_view, view_.size());
  force_requested_ = true;
  backoff_until_ = now;
  evaluate(now, out);
  return Ok{};
}

const gossip::Member* ViewKeeper::gossip_member(const std::string& name) const {
  const auto it = gossip_index_.find(name);
  return it == gossip_index_.end() ? nullptr : &gossip_[it->second];
}

bool ViewKeeper::live(const std::string& name, uint64_t generation) const {
  const gossip::Member* m = gossip_member(name);
  return m != nullptr && m->id.generation == generation &&
         (m->state == gossip::State::alive || m->state == gossip::State::suspect);
}

bool ViewKeeper::reachable(const std::string& name, uint64_t generation, Time now) const {
  const gossip::Member* m = gossip_member(name);
  if (m == nullptr || m->id.generation != generation) return false;
  if (m->state == gossip::State::alive || m->state == gossip::State::suspect) return true;
  // Left gracefully: it lingers as an acceptor for a while (see Config::leaver_votes_for).
  return m->state == gossip::State::left && now - m->state_since < cfg_.leaver_votes_for;
}

bool ViewKeeper::live_by_name(const std::string& name) const {
  const gossip::Member* m = gossip_member(name);
  return m != nullptr && (m->state == gossip::State::alive || m->state == gossip::State::suspect);
}

bool ViewKeeper::designated_proposer() const {
  const std::string* smallest = nullptr;
  if (view_.epoch() == 0) {
    for (const auto& m : gossip_) {
      if (m.state == gossip::State::alive && (smallest == nullptr || m.id.name < *smallest)) smallest = &m.id.name;
    }
  } else {
    for (const auto& vm : view_.members()) {
      if (live(vm.name, vm.generation) && (smallest == nullptr || vm.name < *smallest)) smallest = &vm.name;
    }
  }
  return smallest != nullptr && *smallest == self_.name;
}

std::string ViewKeeper::evicted_reason(Time now) const {
  if (!status_.in_view && view_.excludes(self_.name)) {
    return "excluded by the operator (`shoal view exclude`): `shoal view readmit " + self_.name +
           "` on a member of the view lets it back";
  }
  if (!status_.evicted) return "";
  const Time left = status_.evicted->until > now ? status_.evicted->until - now : Time{0};
  return "evicted as a straggler by epoch " + std::to_string(status_.evicted->epoch) + " (named from step " +
         std::to_string(status_.evicted->since_step) + "); readmitted " +
         (left.count() > 0 ? "once alive out of the view for " + std::to_string((left.count() + 999'999) / 1'000'000) +
                                 " s more"
                           : "at the next view change");
}

void ViewKeeper::evaluate(Time now, KeeperOutput& out) {
  // An eviction is proposed only by a member of the view, and never during a forced change.
  const ViewMember* me = view_.find(self_.name);
  const bool in_view = me != nullptr && me->generation == self_.generation;
  const auto evict = in_view && !force_requested_ ? eviction_.candidate(view_, now) : std::nullopt;
  const auto want_excluded = wanted_excluded();
  const Desired d = desired_view(view_, gossip_, damper_, cfg_, now, evict, installed_at_, &gossip_index_,
                                 want_excluded ? &*want_excluded : nullptr);
  // The operator asked this member: it proposes at once, whoever the designated proposer is.
  const bool operator_change = in_view && want_excluded.has_value() && !force_requested_;
  status_.epoch = view_.epoch();
  status_.view_size = view_.size();
  status_.live_of_view = d.live_of_view;
  status_.in_view = in_view;
  status_.evicted = in_view ? std::nullopt : evicted_self_;
  status_.eviction = d.evict_blocked;
  if (d.evicted) status_.eviction = "evicting " + *d.evicted + " as a straggler";
  if (const auto due = eviction_.next_due(view_, now)) out.wake_no_later_than(*due);
  if (d.next_eligible) out.wake_no_later_than(*d.next_eligible);
  if (!commit_retries_.empty()) out.wake_no_later_than(commit_retries_.begin()->first);
  if (catch_up_) {
    out.wake_no_later_than(catch_up_->deadline);
  } else if (behind_hint_ > view_.epoch()) {
    out.wake_no_later_than(std::max(catch_up_after_, now));
  }

  if (round_) {
    status_.phase = KeeperPhase::proposing;
    status_.reason = "proposing epoch " + std::to_string(round_->epoch()) + " (" +
                     (round_->step() == RoundStep::prepare ? "prepare" : "accept") + "), waiting for " +
                     round_->waiting_for();
    out.wake_no_later_than(round_deadline_);
    return;
  }
  if (!d.differs) {
    pending_since_.reset();
    last_desired_.reset();
    force_requested_ = false;
    status_.phase = view_.epoch() == 0 ? KeeperPhase::forming : KeeperPhase::stable;
    status_.reason = view_.epoch() == 0 ? "forming: no members" : evicted_reason(now);
    if (status_.reason.empty()) status_.reason = catch_up_note();
    if (status_.reason.empty() && d.joins_held > 0) {
      const Time left = *d.joins_open_at - now;
      status_.reason = std::to_string(d.joins_held) + " joiner(s) wait for the join window: admitted in " +
                       std::to_string((left.count() + 999'999) / 1'000'000) + " s, or at once with the next change";
    }
    return;
  }
  if (const uint64_t fp = members_fingerprint(d.members); last_desired_ != fp) {
    last_desired_ = fp;
    last_change_ = now;
  }
  if (!d.blocked.empty() && !force_requested_) {
    // The settle window starts when a change may be proposed, not when it was first wanted: after a
    // long stall (a partition) the first members back must not be proposed alone, without the rest
    // whose refutations arrive a few milliseconds later.
    pending_since_.reset();
    status_.phase = view_.epoch() == 0 ? KeeperPhase::forming : KeeperPhase::stalled;
    status_.reason = d.blocked;
    return;
  }
  if (!pending_since_) pending_since_ = now;
  // An operator's force may come from a survivor that an inherited value left out of the view (its
  // members may all be dead): it proposes like any member then.
  if (view_.epoch() > 0 && !status_.in_view && !force_requested_) {
    status_.phase = KeeperPhase::proposing;
    status_.reason = evicted_reason(now);
    if (status_.reason.empty()) status_.reason = "not in the committed view: waiting to be admitted";
    return;
  }
  const Time quiet = d.refused_only ? std::min(cfg_.settle_refused, cfg_.settle_quiet) : cfg_.settle_quiet;
  const bool due = force_requested_ || operator_change || d.graceful_only || now - last_change_ >= quiet ||
                   now - *pending_since_ >= cfg_.settle_max;
  const bool may =
      force_requested_ || operator_change || designated_proposer() || now - *pending_since_ >= cfg_.takeover_after;
  if (due && may && now >= backoff_until_) {
    const bool all_members = view_.epoch() == 0 || force_requested_ ||
                             (cfg_.policy == QuorumPolicy::any && !d.majority_live);
    start_round(d, all_members, now, out);
    return;
  }
  Time wake = std::min(last_change_ + quiet, *pending_since_ + cfg_.settle_max);
  if (!may) wake = std::max(wake, *pending_since_ + cfg_.takeover_after);
  out.wake_no_later_than(std::max(wake, backoff_until_));
  status_.phase = KeeperPhase::proposing;
  status_.reason = may ? "change pending, settling" : "change pending, waiting for the designated proposer";
}

void ViewKeeper::start_round(const Desired& d, bool all_members_mode, Time now, KeeperOutput& out) {
  // The first view of a cluster gets its lineage here; every later one copies it.
  const uint64_t lineage =
      view_.epoch() == 0 ? first_lineage(d.members, self_.name, self_.generation) : view_.lineage();
  std::vector<std::string> evicted;
  if (d.evicted) evicted.push_back(*d.evicted);
  auto value = View::make(view_.epoch() + 1, d.members, lineage, std::move(evicted), d.excluded);
  if (!value) {
    log::membership().error("cannot form the next view: {}", value.error().message);
    backoff_until_ = now + cfg_.takeover_after;
    return;
  }
  highest_round_seen_ += 1;
  Ballot ballot{highest_round_seen_, self_.name};
  round_ = std::make_unique<Round>(next_round_id_++, ballot, std::move(*value), view_, all_members_mode);
  if (view_.epoch() == 0) {
    std::map<std::string, std::string> witnesses;
    for (const auto& m : gossip_) {
      const bool live_member = m.state == gossip::State::alive || m.state == gossip::State::suspect;
      if (live_member && m.id.name != self_.name && round_->value().find(m.id.name) == nullptr) {
        witnesses[m.id.name] = m.id.addr;
      }
    }
    round_->require_answer_from(std::move(witnesses));
  }
  round_all_members_ = all_members_mode;
  force_requested_ = false;
  ++stats_.rounds_started;
  log::membership().debug("round {} for epoch {}: ballot ({}, {}), {} members", round_->id(), round_->epoch(),
                          ballot.round, ballot.proposer, round_->value().size());
  send_phase(now, out);
}

void ViewKeeper::send_phase(Time now, KeeperOutput& out) {
  round_deadline_ = now + cfg_.phase_timeout;
  out.wake_no_later_than(round_deadline_);
  const bool prepare = round_->step() == RoundStep::prepare;
  wire::ViewRequest req;
  req.set_epoch(round_->epoch());
  to_msg(round_->ballot(), req.mutable_ballot());
  req.set_from_name(self_.name);
  req.set_from_generation(self_.generation);
  if (prepare) {
    auto* p = req.mutable_prepare();
    for (const auto& name : round_->value().evicted()) p->add_evicting(name);
  } else {
    to_msg(round_->value(), req.mutable_accept()->mutable_view());
    req.mutable_accept()->set_forced(round_all_members_);
  }
  const std::vector<std::byte> bytes = encode(req);
  const uint64_t round_id = round_->id();
  for (const auto& [name, addr] : round_->targets()) {
    if (!round_ || round_->id() != round_id) return;
    if (name == self_.name) {
      const wire::ViewResponse resp = answer(req, now, out);
      if (round_ && round_->id() == round_id) round_->record(name, vote_from(resp, prepare));
      continue;
    }
    const ViewMember* in_base = view_.find(name);
    const ViewMember* in_value = round_->value().find(name);
    // A bootstrap witness is in neither view: gossip's live check alone says whether to wait for it.
    const bool reach = in_value || in_base ? reachable(name, in_value ? in_value->generation : in_base->generation, now)
                                           : live_by_name(name);
    if (!reach && !(in_base && reachable(name, in_base->generation, now))) {
      round_->record_failure(name);  // gossip already knows it is gone: do not wait for a timeout
      continue;
    }
    const uint64_t token = next_token_++;
    pending_[token] = Pending{round_id, name, addr, 0, 0};
    out.requests.push_back({token, addr, bytes, round_deadline_});
  }
  advance_round(now, out);
}

void ViewKeeper::advance_round(Time now, KeeperOutput& out) {
  if (!round_) return;
  switch (round_->quorum()) {
    case Quorum::pending: return;
    case Quorum::impossible: fail_round(now, "quorum can no longer be reached"); return;
    case Quorum::reached: break;
  }
  if (round_->step() == RoundStep::prepare) {
    round_->begin_accept();
    send_phase(now, out);
    return;
  }
  const View value = round_->value();
  for (const auto& [name, addr] : round_->targets()) {
    if (name != self_.name) send_commit(name, addr, value, !round_->accepted_by(name), 0, now, out);
  }
  round_.reset();
  install(value, now, out);
}

void ViewKeeper::fail_round(Time now, const std::string& why) {
  log::membership().debug("round {} for epoch {} failed: {}", round_->id(), round_->epoch(), why);
  ++stats_.rounds_failed;
  if (!round_->value().evicted().empty()) {
    log::membership().info("the view that evicts {} was not committed ({}); no eviction for the next {} s",
                           round_->value().evicted().front(), why, cfg_.eviction.after.count() / 1'000'000);
    eviction_.round_failed(now);
  }
  round_.reset();
  const auto base = cfg_.retry_backoff.count();
  backoff_until_ = now + Time(base + static_cast<int64_t>(rng_() % static_cast<uint64_t>(2 * base + 1)));
}

void ViewKeeper::send_commit(const std::string& name, const std::string& addr, const View& v, bool full, int attempt,
                             Time now, KeeperOutput& out) {
  wire::ViewRequest req;
  req.set_epoch(v.epoch());
  req.set_from_name(self_.name);
  req.set_from_generation(self_.generation);
  auto* c = req.mutable_commit();
  c->set_hash(v.hash());
  if (full) to_msg(v, c->mutable_view());
  const uint64_t token = next_token_++;
  pending_[token] = Pending{0, name, addr, attempt, v.epoch()};
  out.requests.push_back({token, addr, encode(req), now + cfg_.phase_timeout});
}

void ViewKeeper::install(const View& v, Time now, KeeperOutput& out) {
  if (v.epoch() <= view_.epoch()) return;
  undelivered_.clear();
  for (const auto& m : view_.members()) {
    const ViewMember* next = v.find(m.name);
    if (next != nullptr && next->generation == m.generation) continue;
    if (v.excludes(m.name)) {
      damper_.removed(m.name, m.generation, now, std::nullopt, false);  // the operator's: not a failure
      continue;
    }
    if (v.evicts(m.name)) {
      damper_.removed(m.name, m.generation, now, std::max(cfg_.eviction.hold_down, cfg_.hold_down));
      const uint64_t since = eviction_.first_named_step(m.name);
      log::membership().warn(
          "view epoch {} evicts {} as a straggler (the verdict named it from step {} of epoch {}); "
          "it stays out of views for the hold-down of {} s, then may rejoin",
          v.epoch(), m.name, since, view_.epoch(),
          std::max(cfg_.eviction.hold_down, cfg_.hold_down).count() / 1'000'000);
      if (m.name == self_.name) {
        evicted_self_ = KeeperStatus::Evicted{v.epoch(), since, now + std::max(cfg_.eviction.hold_down, cfg_.hold_down)};
        log::membership().warn(
            "this member ({}) was evicted from the job's view as a straggler: "
            "it stays alive out of views and asks to rejoin after the hold-down",
            self_.name);
      }
    } else {
      // A graceful leave (gossip holds this process as left) is not a failure; dead, or replaced by a newer
      // process, is: a host that keeps failing is held down longer each time (flap_damper.hpp).
      const gossip::Member* g = gossip_member(m.name);
      const bool left = g != nullptr && g->id.generation == m.generation && g->state == gossip::State::left;
      damper_.removed(m.name, m.generation, now, std::nullopt, !left);
      const uint32_t failures = left ? 0 : damper_.failures(m.name);
      if (failures >= 2) {
        log::membership().warn(
            "view epoch {} removes {}: its failure {} in a row (none more than {} s apart), so it is held down "
            "{} s (a restart {} s) before it is readmitted",
            v.epoch(), m.name, failures, cfg_.failures_forgotten.count() / 1'000'000,
            hold_down_for(failures, false, cfg_.hold_down, cfg_.hold_down_max).count() / 1'000'000,
            hold_down_for(failures, true, cfg_.hold_down, cfg_.hold_down_max).count() / 1'000'000);
      }
    }
  }
  if (!v.evicted().empty()) ++status_.evictions;
  exclusions_installed(v);
  eviction_.on_install(v, now);
  if (v.find(self_.name) != nullptr) evicted_self_.reset();
  log::membership().info("view epoch {} committed: {} members, hash {:016x} (was epoch {}, {} members)", v.epoch(),
                         v.size(), v.hash(), view_.epoch(), view_.size());
  view_ = v;
  installed_at_ = now;
  acceptor_.reset(v.epoch() + 1);
  highest_round_seen_ = 0;  // ballot rounds count per epoch (plausible_round)
  vouches_.reset();
  catch_up_.reset();
  joiner_hints_.clear();
  catch_up_retries_ = 0;
  if (behind_value_ && behind_value_->epoch() <= v.epoch()) behind_value_.reset();
  if (behind_hint_ > v.epoch()) {
    catch_up_after_ = now;  // a newer epoch was offered: go on catching up from this view
  } else {
    behind_hint_ = 0;
  }
  if (round_ && round_->epoch() <= v.epoch()) round_.reset();
  pending_since_.reset();
  last_desired_.reset();
  ++stats_.views_installed;
  out.committed.push_back(v);
  out.wake_no_later_than(now);  // look again at once: more changes may be waiting
}

}  // namespace shoal::membership

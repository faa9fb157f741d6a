// ViewKeeper, the side facing peers: answering prepare/accept/commit requests as an acceptor and
// learner, and taking in the responses to our own requests.
#include "base/log.hpp"
#include "membership/view_codec.hpp"
#include "membership/view_keeper.hpp"

#include <algorithm>

namespace shoal::membership {
namespace {

constexpr int kMaxCommitAttempts = 4;

}  // namespace

std::vector<std::byte> ViewKeeper::on_request(std::span<const std::byte> bytes, Time now, KeeperOutput& out) {
  auto req = decode_request(bytes);
  if (!req) {
    stats_.rejected.add(req.error().cause);
    log::membership().warn("view request rejected ({}): {}", wire::name(req.error().cause), req.error().detail);
    return {};
  }
  const wire::ViewResponse resp = answer(*req, now, out);
  evaluate(now, out);
  return encode(resp);
}

wire::ViewResponse ViewKeeper::answer(const wire::ViewRequest& req, Time now, KeeperOutput& out) {
  ++stats_.requests_served;
  wire::ViewResponse resp;
  resp.set_generation(self_.generation);
  const uint64_t t = req.epoch();

  if (req.has_query()) {
    // A member catching up asks what this one committed (view_keeper.hpp: its answer is one report).
    resp.set_verdict(wire::ViewResponse::COMMITTED);
    resp.set_committed_epoch(view_.epoch());
    if (view_.epoch() > t) to_msg(view_, resp.mutable_committed());
    return resp;
  }
  if (req.has_commit()) {
    if (t > view_.epoch()) {
      // The value this member accepted for epoch t: as an acceptor (t = e + 1), or while behind.
      const View* accepted = acceptor_.epoch() == t && acceptor_.accepted() ? &*acceptor_.accepted()
                             : behind_value_ && behind_value_->epoch() == t ? &*behind_value_
                                                                           : nullptr;
      if (req.commit().has_view()) {
        auto v = from_msg(req.commit().view());
        if (v && v->epoch() == t) {
          const bool accepted_here = accepted != nullptr && *accepted == *v;
          consider(*v, ViewSource::commit, req.from_name(), req.from_generation(), accepted_here, now, out);
        } else {
          stats_.rejected.add(wire::RejectCause::malformed);
          log::membership().warn("commit for epoch {} from {} carries a bad view: {}", t, req.from_name(),
                                 v ? std::string("epoch mismatch") : v.error().message);
        }
      } else if (accepted != nullptr && accepted->hash() == req.commit().hash()) {
        const View value = *accepted;
        consider(value, ViewSource::commit, req.from_name(), req.from_generation(), true, now, out);
      }
    }
    resp.set_verdict(t <= view_.epoch() ? wire::ViewResponse::COMMITTED : wire::ViewResponse::NEED_FULL);
    resp.set_committed_epoch(view_.epoch());
    return resp;
  }

  resp.set_committed_epoch(view_.epoch());
  const bool prepare = req.has_prepare();
  if (t <= view_.epoch()) {
    // The proposer is behind: tell it what was committed.
    resp.set_verdict(wire::ViewResponse::NACK);
    to_msg(view_, resp.mutable_committed());
    return resp;
  }
  if (t > view_.epoch() + 1) {
    // We are behind (or a joiner that has not learned the view): ready, but no acceptor. A value that
    // admits this member is kept: its COMMIT then installs it as an acceptor's would (view_keeper.hpp).
    if (!prepare) keep_behind_value(req, now);
    resp.set_verdict(prepare ? wire::ViewResponse::PROMISE : wire::ViewResponse::ACCEPTED);
    resp.set_acceptor(false);
    return resp;
  }
  const ViewMember* me = view_.find(self_.name);
  resp.set_acceptor(t == 1 || (me != nullptr && me->generation == self_.generation));
  const Ballot b = from_msg(req.ballot());
  if (!plausible_round(b.round)) {
    refuse(ViewRefusal::ballot,
           "a ballot of round " + std::to_string(b.round) + " from " + req.from_name() + " for epoch " +
               std::to_string(t) + " (the highest seen is " + std::to_string(highest_round_seen_) + ")",
           now);
    resp.set_verdict(wire::ViewResponse::NACK);
    return resp;
  }
  highest_round_seen_ = std::max(highest_round_seen_, b.round);
  bool ok = false;
  if (prepare) {
    const std::vector<std::string> evicting(req.prepare().evicting().begin(), req.prepare().evicting().end());
    if (!evicting.empty() && !agrees_to_evict(evicting, req.from_name())) {
      resp.set_verdict(wire::ViewResponse::NACK);
      return resp;
    }
    ok = acceptor_.prepare(b);
  } else {
    auto value = from_msg(req.accept().view());
    if (!value || value->epoch() != t) {
      stats_.rejected.add(wire::RejectCause::malformed);
      log::membership().warn("accept for epoch {} from {} carries a bad view", t, req.from_name());
      resp.set_verdict(wire::ViewResponse::NACK);
      return resp;
    }
    if (!value->evicted().empty() && !agrees_to_evict(value->evicted(), req.from_name())) {
      resp.set_verdict(wire::ViewResponse::NACK);
      return resp;
    }
    ok = acceptor_.accept(b, *value);
  }
  if (!ok) {
    resp.set_verdict(wire::ViewResponse::NACK);
    to_msg(acceptor_.promised(), resp.mutable_promised());
    return resp;
  }
  resp.set_verdict(prepare ? wire::ViewResponse::PROMISE : wire::ViewResponse::ACCEPTED);
  if (prepare && acceptor_.accepted()) {
    to_msg(*acceptor_.accepted_ballot(), resp.mutable_accepted_ballot());
    to_msg(*acceptor_.accepted(), resp.mutable_accepted());
  }
  return resp;
}

void ViewKeeper::keep_behind_value(const wire::ViewRequest& req, Time now) {
  const uint64_t t = req.epoch();
  if (behind_value_ && behind_value_->epoch() > t) return;  // an older round's value: the newer one stays
  auto value = from_msg(req.accept().view());
  if (!value || value->epoch() != t) {
    stats_.rejected.add(wire::RejectCause::malformed);
    return;
  }
  const ViewMember* me = value->find(self_.name);
  if (me == nullptr || me->generation != self_.generation) return;  // only a value that admits this member
  const AdmissionVerdict bounds = admit(OfferedView{view_, *value, ViewSource::answer, {}, 0, true, false});
  if (bounds.action == Admission::refuse) {
    refuse(*bounds.why, "an accept from " + req.from_name() + " of epoch " + std::to_string(t), now);
    return;
  }
  behind_value_ = std::move(*value);
}

bool ViewKeeper::agrees_to_evict(const std::vector<std::string>& names, const std::string& proposer) {
  if (names.size() <= 1 && eviction_.agrees(names)) return true;
  if (refusal_logged_epoch_ != view_.epoch()) {
    refusal_logged_epoch_ = view_.epoch();
    log::membership().warn("refusing {}'s view that evicts {} as a straggler: {}", proposer, names.front(),
                           !eviction_.enabled() ? "eviction is off here (--evict-stragglers)"
                           : names.size() > 1
                               ? "it evicts more than one member at once"
                               : "this member's own verdict never named it in epoch " + std::to_string(view_.epoch()));
  }
  return false;
}

Vote ViewKeeper::vote_from(const wire::ViewResponse& resp, bool prepare_phase) const {
  Vote v;
  v.acceptor = resp.acceptor();
  const auto verdict = resp.verdict();
  v.ok = prepare_phase ? verdict == wire::ViewResponse::PROMISE : verdict == wire::ViewResponse::ACCEPTED;
  if (verdict == wire::ViewResponse::NACK && resp.has_promised() && resp.promised().round() > 0) {
    v.higher = from_msg(resp.promised());
  }
  if (v.ok && resp.has_accepted_ballot() && resp.has_accepted()) {
    auto accepted = from_msg(resp.accepted());
    if (accepted) {
      v.accepted_ballot = from_msg(resp.accepted_ballot());
      v.accepted = std::move(*accepted);
    }
  }
  return v;
}

void ViewKeeper::learn_from(const Pending& p, const wire::ViewResponse& resp, Time now, KeeperOutput& out) {
  if (!resp.has_committed() || resp.committed().epoch() <= view_.epoch()) return;
  auto v = from_msg(resp.committed());
  if (!v) {
    stats_.rejected.add(wire::RejectCause::malformed);
    return;
  }
  vouched(p.name, p.addr, resp.generation(), *v, now, out);
  consider(*v, ViewSource::answer, p.name, resp.generation(), false, now, out);
}

void ViewKeeper::on_response(uint64_t token, std::optional<std::span<const std::byte>> bytes, Time now,
                             KeeperOutput& out) {
  const auto it = pending_.find(token);
  if (it == pending_.end()) return;
  const Pending p = it->second;
  pending_.erase(it);

  std::optional<wire::ViewResponse> resp;
  if (bytes) {
    auto r = decode_response(*bytes);
    if (r) {
      resp = std::move(*r);
    } else {
      stats_.rejected.add(r.error().cause);
    }
  }
  if (resp) learn_from(p, *resp, now, out);

  if (p.query_id != 0) {
    on_query_answer(p, now, out);
    evaluate(now, out);
    return;
  }
  if (p.round_id == 0) {  // delivery of a commit
    if (p.commit_epoch == view_.epoch()) {
      if (resp && resp->verdict() == wire::ViewResponse::NEED_FULL && p.attempts + 1 < kMaxCommitAttempts) {
        send_commit(p.name, p.addr, view_, true, p.attempts + 1, now, out);
      } else if (!resp && !live_by_name(p.name)) {
        // Unreachable now (a partition): deliver once gossip sees it alive again (on_members).
        undelivered_[p.name] = p.addr;
      } else if (!resp) {
        // Keep trying while the member lives and this view is the newest: a member of the view that missed
        // its commit (a partition during the delivery) would otherwise wait forever to be admitted to a
        // view it is already in. The pause doubles up to 8 x commit_retry.
        Pending retry = p;
        retry.attempts += 1;
        const Time pause = cfg_.commit_retry * (1 << std::min(retry.attempts - 1, 3));
        commit_retries_.emplace(now + pause, retry);
        out.wake_no_later_than(now + pause);
      }
    }
    evaluate(now, out);
    return;
  }

  if (round_ && round_->id() == p.round_id) {
    if (!resp) {
      round_->record_failure(p.name);
    } else {
      Vote v = vote_from(*resp, round_->step() == RoundStep::prepare);
      // One test of v.higher, its round read once: GCC 12 at -O3 (the wheel's build) otherwise warns that the
      // optional's round "may be used uninitialized" after reset() (-Wmaybe-uninitialized, a false positive).
      if (v.higher) {
        const uint64_t higher_round = v.higher->round;
        if (plausible_round(higher_round)) {
          highest_round_seen_ = std::max(highest_round_seen_, higher_round);
        } else {
          refuse(ViewRefusal::ballot,
                 "a nack from " + p.name + " naming round " + std::to_string(higher_round) + " (the highest seen is " +
                     std::to_string(highest_round_seen_) + ")",
                 now);
          v.higher.reset();
        }
      }
      // A member of our view that is behind cannot vote: bring it up to date for the next round.
      if (view_.epoch() > 0 && resp->committed_epoch() < view_.epoch() && view_.find(p.name) != nullptr) {
        send_commit(p.name, p.addr, view_, true, 0, now, out);
      }
      round_->record(p.name, std::move(v));
    }
    advance_round(now, out);
  }
  evaluate(now, out);
}

}  // namespace shoal::membership

// ViewKeeper, catching up: which newer views offered by peers are installed, confirming the others with
// the members of the current view (QUERY requests), and counting what is refused (view_keeper.hpp's
// header states the rule).
#include <algorithm>
#include <limits>

#include "base/log.hpp"
#include "membership/view_codec.hpp"
#include "membership/view_keeper.hpp"

namespace shoal::membership {
namespace {

constexpr Time kRefusalLogInterval{10'000'000};
constexpr int kQuietCatchUpRetries = 5;

std::string describe(const View& v, ViewSource source, const std::string& sender) {
  return std::string(source == ViewSource::commit ? "a COMMIT" : "an answer") + " from " + sender + " of epoch " +
         std::to_string(v.epoch()) + " (" + std::to_string(v.size()) + " members)";
}

}  // namespace

uint64_t KeeperStats::refused_total() const {
  uint64_t n = 0;
  for (uint64_t c : refused) n += c;
  return n;
}

void ViewKeeper::refuse(ViewRefusal why, const std::string& detail, Time now) {
  const auto i = static_cast<size_t>(why);
  ++stats_.refused[i];
  auto& last = refusal_logged_at_[i];
  if (last && now - *last < kRefusalLogInterval) return;
  last = now;
  log::membership().warn("{}: refused {} ({}); {} refused for this cause so far, logged at most every 10 s", self_.name,
                         detail, name(why), stats_.refused[i]);
}

bool ViewKeeper::plausible_round(uint64_t round) const {
  return round <= highest_round_seen_ || round - highest_round_seen_ <= kMaxBallotStep;
}

bool ViewKeeper::orphaned() {
  if (view_.epoch() == 0) return false;
  size_t others = 0;
  for (const auto& m : view_.members()) {
    if (m.name != self_.name && live(m.name, m.generation)) ++others;
  }
  return others < confirmations_needed(view_, self_.name, self_.generation);
}

Vouches& ViewKeeper::vouches() {
  if (!vouches_) vouches_.emplace(view_, self_.name, self_.generation);
  return *vouches_;
}

void ViewKeeper::consider(const View& v, ViewSource source, const std::string& sender, uint64_t sender_generation,
                          bool accepted_here, Time now, KeeperOutput& out) {
  const AdmissionVerdict verdict =
      admit(OfferedView{view_, v, source, sender, sender_generation, accepted_here, false});
  switch (verdict.action) {
    case Admission::ignore: return;
    case Admission::refuse: refuse(*verdict.why, describe(v, source, sender), now); return;
    case Admission::install: install(v, now, out); return;
    case Admission::confirm: break;
  }
  if (view_.epoch() > 0 && orphaned()) {
    // admit() with orphaned = true says install: too few members of the view are alive ever to confirm.
    log::membership().info(
        "{}: too few members of epoch {} are alive to confirm epoch {} ({}): "
        "taking it as a joiner would",
        self_.name, view_.epoch(), v.epoch(), describe(v, source, sender));
    install(v, now, out);
    return;
  }
  want_catch_up(v, now, out);
}

void ViewKeeper::vouched(const std::string& name, const std::string& addr, uint64_t generation,
                         const View& committed, Time now, KeeperOutput& out) {
  if (committed.epoch() <= view_.epoch()) return;
  // The epoch bounds hold for a confirmed view too (admit() refuses and counts the same view at once).
  if (committed.epoch() == std::numeric_limits<uint64_t>::max() || committed.epoch() - view_.epoch() > kMaxEpochJump) {
    return;
  }
  if (view_.epoch() == 0) {
    // A joiner counts only members gossip shows alive where it asked them (Vouches).
    const gossip::Member* g = gossip_member(name);
    if (g == nullptr || g->id.addr != addr || g->id.generation != generation || !live(name, generation)) return;
  }
  if (!vouches().record(name, addr, generation, committed)) return;
  if (auto confirmed = vouches_->confirmed()) {
    ++stats_.catch_ups;
    log::membership().info("{}: epoch {} confirmed by the members asked (from epoch {}): installing it", self_.name,
                           confirmed->epoch(), view_.epoch());
    install(*confirmed, now, out);
  }
}

void ViewKeeper::want_catch_up(const View& offered, Time now, KeeperOutput& out) {
  behind_hint_ = std::max(behind_hint_, offered.epoch());
  if (view_.epoch() == 0) {
    const bool known = std::any_of(joiner_hints_.begin(), joiner_hints_.end(),
                                   [&](const View& h) { return h.hash() == offered.hash() && h == offered; });
    if (!known) {
      if (joiner_hints_.size() >= 4) joiner_hints_.erase(joiner_hints_.begin());
      joiner_hints_.push_back(offered);
    }
  }
  if (catch_up_) return;  // the running round looks again when it ends
  if (now < catch_up_after_) {
    out.wake_no_later_than(catch_up_after_);
    return;
  }
  start_catch_up(now, out);
}

void ViewKeeper::start_catch_up(Time now, KeeperOutput& out) {
  if (behind_hint_ <= view_.epoch()) {
    behind_hint_ = 0;
    return;
  }
  // Whom to ask: the other members of this member's view; a joiner, the members of the views offered to
  // it that gossip shows alive at the address and generation those views record.
  std::map<std::string, std::string> ask;
  if (view_.epoch() > 0) {
    for (const auto& m : view_.members()) {
      if (m.name != self_.name && live(m.name, m.generation)) ask.emplace(m.name, m.addr);
    }
  } else {
    for (const View& hint : joiner_hints_) {
      for (const auto& m : hint.members()) {
        const gossip::Member* g = gossip_member(m.name);
        if (m.name != self_.name && g != nullptr && g->id.addr == m.addr && live(m.name, m.generation)) {
          ask.emplace(m.name, m.addr);
        }
      }
    }
  }
  catch_up_ = CatchUp{next_catch_up_id_++, view_.epoch(), 0, now + cfg_.phase_timeout};
  wire::ViewRequest req;
  req.set_epoch(view_.epoch());
  req.set_from_name(self_.name);
  req.set_from_generation(self_.generation);
  req.mutable_query();
  const std::vector<std::byte> bytes = encode(req);
  for (const auto& [name, addr] : ask) {
    const uint64_t token = next_token_++;
    pending_[token] = Pending{0, name, addr, 0, 0, catch_up_->id};
    out.requests.push_back({token, addr, bytes, catch_up_->deadline});
    ++catch_up_->outstanding;
  }
  log::membership().debug("{}: catching up from epoch {} (epoch {} was offered): asking {} members", self_.name,
                          view_.epoch(), behind_hint_, catch_up_->outstanding);
  if (catch_up_->outstanding == 0) {
    finish_catch_up(now, out);
    return;
  }
  out.wake_no_later_than(catch_up_->deadline);
}

void ViewKeeper::on_query_answer(const Pending& p, Time now, KeeperOutput& out) {
  // The answer's view was counted already (learn_from); here only the round's bookkeeping.
  if (!catch_up_ || catch_up_->id != p.query_id) return;
  if (catch_up_->outstanding > 0) --catch_up_->outstanding;
  if (catch_up_->outstanding == 0) finish_catch_up(now, out);
}

void ViewKeeper::finish_catch_up(Time now, KeeperOutput& out) {
  catch_up_.reset();
  if (behind_hint_ <= view_.epoch()) {
    behind_hint_ = 0;
    return;
  }
  const size_t reporters = vouches_ ? vouches_->reporters() : 0;
  const std::string detail = "epoch " + std::to_string(behind_hint_) + ", offered by a peer: " +
                             std::to_string(reporters) + " member(s) asked hold a newer view than epoch " +
                             std::to_string(view_.epoch()) + ", too few to confirm it";
  // Every such round counts; a warning only when nobody holds the offered view, or after several rounds
  // (a change still spreading is confirmed within one or two).
  if (reporters == 0 || catch_up_retries_ >= kQuietCatchUpRetries) {
    refuse(ViewRefusal::unconfirmed, detail, now);
  } else {
    ++stats_.refused[static_cast<size_t>(ViewRefusal::unconfirmed)];
    log::membership().debug("{}: not yet {} (round {})", self_.name, detail, catch_up_retries_ + 1);
  }
  if (reporters == 0) {
    behind_hint_ = 0;  // nobody holds anything newer: the offer was forged, or is long gone
    joiner_hints_.clear();
    return;
  }
  // Some hold a newer view, too few to confirm it yet: a change still spreading, or one this member's
  // view did not agree to (a forced view). Ask again: soon at first, then every commit_retry. A joiner
  // (epoch 0) backs off further, to joiner_catch_up_max: it asks every member of the views offered to it,
  // and its admission comes from the round that adds it, not from this. Seen in a CI run of 160 agents on
  // 2 cores whose first view left 60 joiners out: their catch-up (100 members each, every 1.5 s) kept the
  // members' connection caps full for minutes (hellos read 75 s after they were sent) while probes failed
  // and no round completed.
  behind_hint_ = std::min(behind_hint_, std::max(vouches_->newest_reported(), view_.epoch() + 1));
  const Time cap = view_.epoch() == 0 ? std::max(cfg_.commit_retry, cfg_.joiner_catch_up_max) : cfg_.commit_retry;
  const Time pause = std::min(cap, cfg_.settle_quiet * (int64_t{1} << std::min(catch_up_retries_, 10)));
  ++catch_up_retries_;
  catch_up_after_ = now + pause;
  out.wake_no_later_than(catch_up_after_);
}

std::string ViewKeeper::catch_up_note() const {
  if (behind_hint_ <= view_.epoch()) return "";
  return "behind: epoch " + std::to_string(behind_hint_) + " was offered; " +
         std::to_string(vouches_ ? vouches_->reporters() : 0) + " of the members asked hold a newer view than epoch " +
         std::to_string(view_.epoch()) + (view_.epoch() > 0 ? ", " + std::to_string(confirmations_needed(
                                                                        view_, self_.name, self_.generation)) +
                                                                    " needed to confirm it"
                                                              : "");
}

}  // namespace shoal::membership

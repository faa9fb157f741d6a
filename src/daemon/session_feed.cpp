// The connected trainer's feed: session-info and the session-wait long poll.
#include "daemon/session_feed.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <charconv>

#include "control/replies/session.hpp"
#include "daemon/reports/view_report.hpp"

namespace shoal::daemon {

struct SessionFeed::Waiter {
  explicit Waiter(boost::asio::io_context& io) : timer(io) {}
  boost::asio::steady_timer timer;
  control::ControlHandlers::Reply reply;
};

namespace {

std::optional<uint64_t> parse_u64(const std::string& s) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

}  // namespace

SessionFeed::SessionFeed(boost::asio::io_context& io, control::ControlHandlers& handlers,
                         std::function<SessionInfo()> info)
    : io_(io), info_(std::move(info)) {
  handlers.add("session-info", "who this agent is, for a trainer that connects to it", [this](auto args) {
    (void)args;
    const SessionInfo i = info_();
    return control::write_reply(
        control::SessionInfoReply{i.name, i.generation, i.addr, i.cluster, i.slots, i.job, i.store, i.key_file,
                                  i.store_by_lineage, i.ckpt_replicas});
  });
  handlers.add_async("session-wait", "SEQ TIMEOUT_MS: the committed view and failures, once newer than SEQ (long poll)",
                     std::chrono::milliseconds(kMaxWaitMs),
                     [this, alive = std::weak_ptr<bool>(alive_), &handlers](std::span<const std::string> args,
                                                                            control::ControlHandlers::Reply reply) {
                       if (alive.expired()) return;
                       const auto seq = args.size() == 2 ? parse_u64(args[0]) : std::nullopt;
                       const auto wait_ms = args.size() == 2 ? parse_u64(args[1]) : std::nullopt;
                       if (!seq || !wait_ms || *wait_ms > kMaxWaitMs) {
                         return reply(handlers.error_reply("usage: session-wait SEQ TIMEOUT_MS (TIMEOUT_MS at most " +
                                                           std::to_string(kMaxWaitMs) + ")"));
                       }
                       if (seq_ > *seq || *wait_ms == 0) return reply(state_json());
                       const uint64_t id = next_waiter_++;
                       auto waiter = std::make_shared<Waiter>(io_);
                       waiter->reply = std::move(reply);
                       waiter->timer.expires_after(std::chrono::milliseconds(*wait_ms));
                       waiter->timer.async_wait([this, id, alive](boost::system::error_code ec) {
                         if (ec || alive.expired()) return;
                         const auto it = waiters_.find(id);
                         if (it == waiters_.end()) return;
                         auto reply_now = std::move(it->second->reply);
                         waiters_.erase(it);
                         reply_now(state_json());
                       });
                       waiters_[id] = std::move(waiter);
                     });
}

SessionFeed::~SessionFeed() {
  alive_.reset();
  for (auto& [id, w] : waiters_) w->timer.cancel();
}

std::string SessionFeed::state_json() const {
  control::SessionWaitReply reply{seq_, broken_epoch_, broken_why_, failures_, std::nullopt, cleared_epoch_, drain_};
  // The view as `shoal view --json` shows it (null before the first view).
  if (view_) reply.view = view_report(info_().name, *view_, membership::KeeperStatus{});
  return control::write_reply(reply);
}

void SessionFeed::notify() {
  ++seq_;
  auto waiters = std::move(waiters_);
  waiters_.clear();
  const std::string doc = state_json();
  for (auto& [id, w] : waiters) {
    w->timer.cancel();
    w->reply(doc);
  }
}

void SessionFeed::on_view(const membership::View& view) {
  view_ = view;
  notify();
}

void SessionFeed::on_drain() {
  if (drain_) return;
  drain_ = true;
  notify();
}

void SessionFeed::on_member(const gossip::MemberEvent& event) {
  const auto state = event.member.state;
  if (!view_) return;
  const auto* m = view_->find(event.member.id.name);
  if (!m || m->generation != event.member.id.generation) return;
  if (state == gossip::State::alive) {
    // A verdict refuted in the same generation: when every member reported failed in the broken epoch
    // answers again, trainers need not wait for a view that will not come.
    if (broken_epoch_ == view_->epoch() && unconfirmed_.erase({m->name, m->generation}) > 0 && unconfirmed_.empty()) {
      cleared_epoch_ = broken_epoch_;
      notify();
    }
    return;
  }
  if (state != gossip::State::dead && state != gossip::State::left) return;
  if (view_->epoch() > broken_epoch_) unconfirmed_.clear();
  unconfirmed_.emplace(m->name, m->generation);
  if (cleared_epoch_ >= view_->epoch()) cleared_epoch_ = 0;  // a new failure in an epoch cleared before
  // Every verdict counts, also a second one in the same epoch: after a false alarm (the member came back,
  // no view removed it) the trainers rebuilt for the same view, and a later failure must abort that too.
  broken_epoch_ = std::max(broken_epoch_, view_->epoch());
  ++failures_;
  broken_why_ = "member " + event.member.id.name + " is " + gossip::to_string(state);
  notify();
}

}  // namespace shoal::daemon

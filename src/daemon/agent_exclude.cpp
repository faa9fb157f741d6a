// Agent: the operator's exclusions. `view-exclude NAME...` and `view-readmit NAME...` (owner access) hand the
// change to the keeper, which proposes it like any view change; the reply waits until a committed view carries
// it (or kExclusionWait: the change stays pending and the keeper goes on proposing it). And --precheck-exclude:
// the hosts the first view's check flags are excluded before that view is handed on to the workers.
#include <algorithm>
#include <boost/asio/steady_timer.hpp>

#include "base/log.hpp"
#include "base/str_cat.hpp"
#include "control/replies/errors_and_acks.hpp"
#include "daemon/agent.hpp"
#include "daemon/membership_runtime.hpp"
#include "membership/exclusion.hpp"

namespace shoal::daemon {
namespace {

// How long a request waits for the view that carries it; the control request's own limit is a little longer.
constexpr std::chrono::milliseconds kExclusionWait{20'000};
constexpr std::chrono::milliseconds kExclusionMaxWait{25'000};

bool carries(const membership::View& v, const std::vector<std::string>& names, bool excluding) {
  return std::all_of(names.begin(), names.end(), [&](const std::string& n) { return v.excludes(n) == excluding; });
}

}  // namespace

struct Agent::ExclusionWait {
  std::vector<std::string> names;
  bool excluding = true;
  control::ControlHandlers::Reply reply;
  std::unique_ptr<asio::steady_timer> timer;
  bool answered = false;
};

void Agent::serve_exclude_requests() {
  control_handlers_.add_async(
      "view-exclude",
      "keep members (or every member of a host) out of every view until readmitted, agreed like any view change: "
      "view-exclude NAME...",
      kExclusionMaxWait,
      [this](std::span<const std::string> args, control::ControlHandlers::Reply reply) {
        exclude_request(args, true, std::move(reply));
      },
      control::Access::owner);
  control_handlers_.add_async(
      "view-readmit", "let excluded members back into views, agreed like any view change: view-readmit NAME...",
      kExclusionMaxWait,
      [this](std::span<const std::string> args, control::ControlHandlers::Reply reply) {
        exclude_request(args, false, std::move(reply));
      },
      control::Access::owner);
  membership_->add_view_observer([this](const membership::View& v) { settle_exclusion_waits(v); });
}

void Agent::exclude_request(std::span<const std::string> args, bool excluding, control::ControlHandlers::Reply reply) {
  const char* what = excluding ? "view-exclude" : "view-readmit";
  if (!membership_ || leaving_)
    return reply(control_handlers_.error_reply(std::string(what) + ": the agent is not running"));
  if (args.empty()) return reply(control_handlers_.error_reply(std::string("usage: ") + what + " NAME..."));
  const std::vector<std::string> words(args.begin(), args.end());
  auto named = excluding ? membership_->exclude(words, {}) : membership_->exclude({}, words);
  const auto& view = membership_->keeper().view();
  if (!named) {
    control::ExcludeReply r{false,        false, std::string(what) + ": " + named.error().message,
                            view.epoch(), {},    view.excluded()};
    return reply(control::write_reply(r));
  }
  auto wait = std::make_shared<ExclusionWait>();
  wait->names = std::move(*named);
  wait->excluding = excluding;
  wait->reply = std::move(reply);
  if (carries(view, wait->names, excluding)) {
    wait->reply(control::write_reply(
        control::ExcludeReply{true, false, std::nullopt, view.epoch(), wait->names, view.excluded()}));
    return;
  }
  wait->timer = std::make_unique<asio::steady_timer>(io_, kExclusionWait);
  wait->timer->async_wait([this, wait, what](boost::system::error_code ec) {
    if (ec || wait->answered) return;
    wait->answered = true;
    const auto& v = membership_->keeper().view();
    const auto st = membership_->keeper().status();
    wait->reply(control::write_reply(control::ExcludeReply{false, true,
                                                           std::string(what) + ": no view carried it within " +
                                                               std::to_string(kExclusionWait.count() / 1000) + " s (" +
                                                               st.reason + "); this agent goes on proposing it",
                                                           v.epoch(), wait->names, v.excluded()}));
    std::erase(exclusion_waits_, wait);
  });
  exclusion_waits_.push_back(std::move(wait));
}

void Agent::settle_exclusion_waits(const membership::View& v) {
  for (auto it = exclusion_waits_.begin(); it != exclusion_waits_.end();) {
    auto& w = **it;
    if (w.answered || !carries(v, w.names, w.excluding)) {
      ++it;
      continue;
    }
    w.answered = true;
    if (w.timer) w.timer->cancel();
    w.reply(control::write_reply(control::ExcludeReply{true, false, std::nullopt, v.epoch(), w.names, v.excluded()}));
    it = exclusion_waits_.erase(it);
  }
  // --precheck-exclude: the held view is handed on once a view carries the flagged hosts' exclusion.
  if (precheck_pending_ && !precheck_excluding_.empty() && carries(v, precheck_excluding_, true)) {
    precheck_excluding_.clear();
    release_views("the hosts the precheck flagged are excluded from epoch " + std::to_string(v.epoch()));
  }
}

bool Agent::precheck_excludes(const std::vector<std::string>& flagged, bool propose) {
  if (!cfg_.precheck_exclude || flagged.empty()) return false;
  const auto& view = membership_->keeper().view();
  const auto pe = membership::precheck_exclusion(view, flagged, cfg_.membership.min_hosts);
  if (pe.names.empty()) {
    if (!pe.refused.empty()) log::agent().warn("precheck: not excluding the flagged host(s): {}", pe.refused);
    return false;
  }
  if (carries(view, pe.names, true)) return false;  // the view that excludes them is here already
  if (propose) {
    if (auto named = membership_->exclude(pe.names, {}); !named) {
      log::agent().warn("precheck: cannot exclude the flagged host(s): {}", named.error().message);
      return false;
    }
  }
  log::agent().warn(
      "precheck: excluding the flagged host(s) {} before the view is handed on (`shoal view readmit` "
      "lets them back)",
      joined(pe.names));
  precheck_excluding_ = pe.names;
  return true;
}

}  // namespace shoal::daemon

// Agent: the pre-flight check. The `check` control request (one check at a time, coordinated from this
// agent over its committed view), the member's side of everyone's checks (CheckMember), and --precheck's
// hold on the first committed view until its check is over.
#include <boost/asio/post.hpp>
#include <charconv>

#include "base/log.hpp"
#include "control/replies/check.hpp"
#include "daemon/agent.hpp"
#include "daemon/check/check_member.hpp"
#include "daemon/membership_runtime.hpp"
#include "health/check_plan.hpp"

namespace shoal::daemon {
namespace {

// How long the control request may take: the compute deadline and two rounds of the longest link probes.
constexpr std::chrono::milliseconds kCheckMaxWait{60'000};

// --precheck: how long the coordinator lets the others commit the first view before it checks them.
constexpr std::chrono::milliseconds kPrecheckSettle{500};

// "key=value" words into `options`; the error names the word.
std::optional<std::string> parse_check_args(std::span<const std::string> args, check::CheckOptions& options) {
  for (const auto& word : args) {
    const auto eq = word.find('=');
    if (eq == std::string::npos) return "expected KEY=VALUE, got '" + word + "'";
    const std::string key = word.substr(0, eq);
    const std::string value = word.substr(eq + 1);
    const char* first = value.data();
    const char* last = value.data() + value.size();
    if (key != "factor" && key != "bytes" && key != "ms" && key != "pings") {
      return "unknown key '" + key + "' (factor, bytes, ms, pings)";
    }
    if (key == "factor") {
      double f = 0;
      const auto [end, ec] = std::from_chars(first, last, f);
      if (ec != std::errc() || end != last) return "factor=" + value + " is not a number";
      options.factor = f;
      if (auto why = health::check_rule_error(health::CheckRule{f})) return "factor=" + value + ": " + *why;
      continue;
    }
    uint64_t n = 0;
    const auto [end, ec] = std::from_chars(first, last, n);
    if (ec != std::errc() || end != last) return key + "=" + value + " is not a non-negative integer";
    if (key == "bytes") {
      if (n == 0 || n > check::kMaxLinkBytes) return "bytes must lie in 1.." + std::to_string(check::kMaxLinkBytes);
      options.bytes = n;
    } else if (key == "ms") {
      if (n == 0 || n > uint64_t(check::kMaxLinkTime.count())) {
        return "ms must lie in 1.." + std::to_string(check::kMaxLinkTime.count());
      }
      options.max_time = std::chrono::milliseconds(n);
    } else {
      if (n == 0 || n > check::kMaxPings) return "pings must lie in 1.." + std::to_string(check::kMaxPings);
      options.pings = static_cast<uint32_t>(n);
    }
  }
  return std::nullopt;
}

}  // namespace

void Agent::serve_check_requests() {
  check_member_ = std::make_unique<check::CheckMember>(
      io_, *listener_,
      check::CheckMember::Hooks{
          .view = [this]() -> const membership::View& { return membership_->keeper().view(); },
          .link_hello = [this] { return hello(wire::Hello::CHECK_LINK); },
          .compute = cfg_.compute_probe,
          .on_done =
              [this](const std::string& coordinator, const std::vector<std::string>& flagged) {
                if (!precheck_pending_) return;
                const auto& view = membership_->keeper().view();
                if (view.members().empty() || view.members().front().name != coordinator) return;
                std::string names;
                for (const auto& n : flagged) names += (names.empty() ? "" : ", ") + n;
                if (!names.empty()) log::agent().warn("precheck by {}: flagged host(s): {}", coordinator, names);
                if (precheck_excludes(flagged, false)) return;  // held until a view excludes them
                release_views("the precheck by " + coordinator + " is over");
              }});
  control_handlers_.add_async(
      "check",
      "pre-flight check of the committed view's members: compute probes and link probes in two rounds "
      "(check [factor=F] [bytes=N] [ms=M] [pings=P])",
      kCheckMaxWait,
      [this](std::span<const std::string> args, control::ControlHandlers::Reply reply) {
        check_request(args, std::move(reply));
      },
      control::Access::local);  // probes every member's compute and links: up to 1 GiB per link
}

void Agent::check_request(std::span<const std::string> args, control::ControlHandlers::Reply reply) {
  check::CheckOptions options;
  if (auto why = parse_check_args(args, options)) return reply(control_handlers_.error_reply("check: " + *why));
  if (auto started = run_check(options, [reply](control::CheckReply r) { reply(control::write_reply(r)); });
      !started) {
    reply(control_handlers_.error_reply("check: " + started.error().message));
  }
}

Status Agent::run_check(check::CheckOptions options, check::CheckRun::Done done) {
  if (!membership_ || leaving_) return fail("the agent is not running");
  if (check_running_) return fail("a check coordinated by this agent is running already; try again in a few seconds");
  const auto& view = membership_->keeper().view();
  if (view.epoch() == 0 || view.find(cfg_.name) == nullptr) {
    return fail("no committed view with this member yet: the check probes the members of one");
  }
  check_running_ = true;
  auto run = std::make_shared<check::CheckRun>(io_, cfg_.name, view, [this] { return hello(wire::Hello::CHECK); },
                                               options, [this, done = std::move(done)](control::CheckReply r) {
                                                 check_running_ = false;
                                                 done(std::move(r));
                                               });
  run->start();
  return Ok{};
}

void Agent::start_precheck() {
  auto started = run_check(cfg_.precheck_options, [this](control::CheckReply r) {
    std::vector<std::string> flagged;
    for (const auto& h : r.hosts) {
      if (!h.flagged) continue;
      flagged.push_back(h.name);
      std::string why;
      for (const auto& reason : h.reasons) why += (why.empty() ? "" : ", ") + reason;
      log::agent().warn(
          "precheck: host {} flagged ({}): {:.1f} GFLOP/s (median {:.1f}), best link {:.2f} Gb/s "
          "(median {:.2f})",
          h.name, why, h.gflops.value_or(0), r.median_gflops.value_or(0), h.gbps.value_or(0),
          r.median_gbps.value_or(0));
    }
    if (precheck_excludes(flagged, true)) return;  // held until the view that excludes them commits
    release_views("the precheck is over");
  });
  if (!started) {
    log::agent().warn("precheck: {}", started.error().message);
    release_views("the precheck could not start");
  }
}

void Agent::on_gated_view(const membership::View& v) {
  if (hold_for_hosts(v)) return;  // --want-hosts: not enough hosts yet (agent_wait_hosts.cpp)
  if (cfg_.precheck && !precheck_started_ && v.find(cfg_.name) != nullptr) {
    precheck_started_ = true;
    precheck_pending_ = true;
    precheck_timer_.expires_after(cfg_.precheck_wait);
    precheck_timer_.async_wait([this](boost::system::error_code ec) {
      if (ec || !precheck_pending_) return;
      log::agent().warn("precheck: no word of the check after {:.0f} s; going on without it",
                        std::chrono::duration<double>(cfg_.precheck_wait).count());
      release_views("the precheck's wait is over");
    });
    if (v.members().front().name == cfg_.name) {
      log::agent().info("precheck: checking the {} member(s) of epoch {} before handing the view on", v.size(),
                        v.epoch());
      // The others commit the same view a moment later; until they do they refuse requests from a member
      // they do not have in a view yet. A short settle, then the check.
      auto settle = std::make_shared<asio::steady_timer>(io_, kPrecheckSettle);
      settle->async_wait([this, settle](boost::system::error_code ec) {
        if (ec || leaving_ || !precheck_pending_) return;
        start_precheck();
      });
    } else {
      log::agent().info("precheck: waiting for {}'s check of epoch {} (at most {:.0f} s)", v.members().front().name,
                        v.epoch(), std::chrono::duration<double>(cfg_.precheck_wait).count());
    }
  }
  if (precheck_pending_) {
    held_view_ = v;
    return;
  }
  for (auto& o : gated_view_observers_) o(v);
}

void Agent::release_views(const std::string& why) {
  if (!precheck_pending_) return;
  precheck_pending_ = false;
  precheck_timer_.cancel();
  log::agent().info("precheck: {}; handing the committed view on", why);
  if (!held_view_) return;
  const membership::View v = std::move(*held_view_);
  held_view_.reset();
  for (auto& o : gated_view_observers_) o(v);
}

}  // namespace shoal::daemon

// The `health` control reply: the local trainer's latest node-health figures and straggler verdict.
#include <fmt/format.h>

#include "base/log.hpp"
#include "control/replies/errors_and_acks.hpp"
#include "control/replies/health.hpp"
#include "daemon/agent.hpp"
#include "daemon/membership_runtime.hpp"

namespace shoal::daemon {

std::string Agent::eviction_line() const {
  const auto& ev = cfg_.membership.eviction;
  if (!ev.enabled) return "off";
  if (!membership_) return "on";
  const auto& keeper = membership_->keeper();
  const auto status = keeper.status();
  const auto now = std::chrono::duration_cast<gossip::Time>(std::chrono::steady_clock::now() - origin_);
  const auto seconds = [](gossip::Time t) { return static_cast<double>(t.count()) / 1e6; };
  if (status.evicted) {
    const double left = std::max(0.0, seconds(status.evicted->until - now));
    return fmt::format("evicted: a straggler from step {} (view epoch {} removed it); readmitted once alive out of "
                       "the view for {:.0f} s more",
                       status.evicted->since_step, status.evicted->epoch, left);
  }
  if (!status.eviction.empty()) return "on: " + status.eviction;
  std::string named;
  if (const auto& h = health_.latest()) {
    for (const auto& n : h->stragglers) {
      if (const auto since = keeper.eviction().named(n)) {
        named += fmt::format("{}{} named for {:.1f} of {:.1f} s", named.empty() ? "" : ", ", n,
                             seconds(now - since->since), seconds(ev.after));
      }
    }
  }
  return fmt::format("on (after {:.0f} s named, one per {:.0f} s, hold-down {:.0f} s): {}", seconds(ev.after),
                     seconds(ev.window), seconds(ev.hold_down), named.empty() ? "nobody named" : named);
}

std::string Agent::health_reply() const {
  control::HealthReply reply;
  reply.self = cfg_.name;
  reply.changes = health_.changes();
  const StragglerOptions defaults;
  const auto& latest = health_.latest();
  const StragglerOptions& r = latest ? latest->rule : defaults;
  reply.rule = {r.factor,      r.min_excess_ms, r.clear_factor, r.window_steps,
                r.min_samples, r.raise_after,   r.clear_after,  r.exchange_every};
  reply.eviction = eviction_line();
  if (!latest) return control::write_reply(reply);
  reply.reported = true;
  reply.epoch = latest->epoch;
  reply.step = latest->step;
  reply.evaluations = latest->evaluations;
  reply.age_s = health_.age_s(std::chrono::steady_clock::now());
  for (const auto& h : latest->hosts) reply.hosts.push_back({h.name, h.compute_ms, h.wait_ms, h.samples, h.straggler});
  reply.stragglers = latest->stragglers;
  reply.dropped = {latest->dropped_records, latest->dropped_figures, latest->forged_records};
  reply.authenticated = latest->authenticated;
  return control::write_reply(reply);
}

std::string Agent::health_report_reply(std::span<const std::string> args) {
  const auto refuse = [&](const std::string& why) {
    ++health_reports_rejected_;
    if (const auto held = health_report_warn_.admit("health-report", std::chrono::steady_clock::now())) {
      log::get(log::Component::agent).warn("node health: a local trainer's report refused: {} ({} refused in all; {} such warning(s) held back)",
                    why, health_reports_rejected_, *held);
    }
    return control_handlers_.error_reply(why);
  };
  if (!membership_) return control_handlers_.error_reply("the agent has not started");
  auto part = health::parse_health_report(args);
  if (!part) return refuse(part.error().message);
  if (part->slot >= std::max<uint32_t>(cfg_.meta.slots, 1)) {
    return refuse("health-report: slot " + std::to_string(part->slot) + " does not exist here");
  }
  auto whole = health_parts_.add(std::move(*part));
  if (!whole) return refuse(whole.error().message);
  if (*whole) {
    JobHealth& h = **whole;
    const uint64_t committed = membership_->keeper().view().epoch();
    if (h.epoch > committed) {
      return refuse("health-report: epoch " + std::to_string(h.epoch) + " is newer than the committed view's " +
                    std::to_string(committed));
    }
    // Every local slot reports the same verdict (every rank of a view holds it): the newest one counts, an
    // older or repeated one is acknowledged and dropped.
    const auto& latest = health_.latest();
    if (!latest || h.epoch > latest->epoch || (h.epoch == latest->epoch && h.step > latest->step)) {
      take_health(std::move(h));
    }
  }
  return control::write_reply(control::CommittedReply{true});
}

}  // namespace shoal::daemon

// systemd notifications from the agent's loop.
#include "ops/agent_notify.hpp"

#include <fmt/format.h>

#include "base/log.hpp"
#include "gossip/swim.hpp"

namespace shoal::ops {

AgentNotifications::AgentNotifications(daemon::Agent& agent, SystemdNotifier notifier)
    : agent_(agent), notifier_(std::move(notifier)), watchdog_(agent.io()) {}

void AgentNotifications::attach() {
  if (!notifier_.enabled()) return;
  agent_.add_view_observer([this](const membership::View& v) { on_view(v); });
}

void AgentNotifications::started() {
  if (!notifier_.enabled()) return;
  last_status_ =
      fmt::format("{} listening on {}, waiting for a committed view", agent_.swim().self().name, agent_.addr());
  report(notifier_.status(last_status_));
  if (const auto interval = notifier_.watchdog_interval()) {
    log::agent().info("systemd watchdog: pinging every {:.1f} s", static_cast<double>(interval->count()) / 1e6);
    ping();
  }
}

void AgentNotifications::stopping() {
  watchdog_.cancel();
  report(notifier_.stopping("leaving the cluster"));
}

void AgentNotifications::reloading() { report(notifier_.reloading()); }

void AgentNotifications::reloaded(const std::string& what) {
  report(notifier_.reloaded(last_status_.empty() ? what : last_status_ + "; " + what));
}

std::string AgentNotifications::view_status(const membership::View& view) const {
  return fmt::format("epoch {}: {} member(s), {}", view.epoch(), view.size(),
                     view.find(agent_.swim().self().name) ? "this host included" : "this host waiting outside");
}

void AgentNotifications::on_view(const membership::View& view) {
  last_status_ = view_status(view);
  const bool included = view.find(agent_.swim().self().name) != nullptr;
  if (!ready_ && included) {
    ready_ = true;
    report(notifier_.ready(last_status_));
    return;
  }
  report(notifier_.status(last_status_));
}

void AgentNotifications::ping() {
  report(notifier_.watchdog());
  const auto interval = notifier_.watchdog_interval();
  if (!interval) return;
  watchdog_.expires_after(*interval);
  watchdog_.async_wait([this](boost::system::error_code ec) {
    if (!ec) ping();
  });
}

void AgentNotifications::report(Status sent) {
  if (sent || warned_) return;
  warned_ = true;  // once: a broken notify socket would otherwise log at every ping
  log::agent().warn("systemd notification failed: {} (further failures are not logged)", sent.error().message);
}

}  // namespace shoal::ops

// Keeps systemd informed about a running `shoal agent` (Type=notify units): READY=1 once a committed
// view includes this member, a STATUS= line at every view (and, before the first, how many members it
// sees), WATCHDOG=1 from the agent's own event loop, so that a hung loop stops the pings and systemd
// restarts the agent, RELOADING=1 around a SIGHUP and STOPPING=1 when it leaves. Outside systemd
// (no NOTIFY_SOCKET) it does nothing.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <string>

#include "daemon/agent.hpp"
#include "ops/systemd_notify.hpp"

namespace shoal::ops {

class AgentNotifications {
 public:
  AgentNotifications(daemon::Agent& agent, SystemdNotifier notifier);
  // Before agent.start(): follows the committed views.
  void attach();
  // After agent.start(): the first status line and the watchdog pings. On the agent's loop.
  void started();
  void stopping();
  void reloading();
  void reloaded(const std::string& what);
  const SystemdNotifier& notifier() const { return notifier_; }

 private:
  void on_view(const membership::View& view);
  void ping();
  void report(Status sent);
  std::string view_status(const membership::View& view) const;

  daemon::Agent& agent_;
  SystemdNotifier notifier_;
  boost::asio::steady_timer watchdog_;
  bool ready_ = false;
  bool warned_ = false;
  std::string last_status_;
};

}  // namespace shoal::ops

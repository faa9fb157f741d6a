// Agent: a deadline for missing hosts (--wait-hosts) and the wait for the wanted ones (--want-hosts). Both are
// decided by this agent's own clock, from its start: every agent of a job started together gives up, or hands
// its first view on, at about the same time, and a trainer's rendezvous waits out the skew between them.
#include "base/log.hpp"
#include "daemon/agent.hpp"
#include "daemon/gossip_runtime.hpp"
#include "daemon/membership_runtime.hpp"

namespace shoal::daemon {
namespace {

// How often the watch looks at the view and the members alive.
constexpr std::chrono::milliseconds kHostsPoll{250};

double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

void Agent::watch_hosts() {
  if (!cfg_.wait_hosts) return;
  hosts_timer_.expires_after(kHostsPoll);
  hosts_timer_.async_wait([this](boost::system::error_code ec) {
    if (ec || leaving_) return;
    const auto now = std::chrono::steady_clock::now();
    const auto& keeper = membership_->keeper();
    const auto status = keeper.status();
    const size_t alive = runtime_->swim().live_count();
    const uint32_t min_hosts = cfg_.membership.min_hosts;
    const double wait_s = seconds(*cfg_.wait_hosts);
    if (keeper.view().epoch() == 0) {  // forming (a spare of a running job knows its view: it waits on)
      if (now - origin_ >= *cfg_.wait_hosts) {
        const std::string why = fmt::format(
            "no committed view after --wait-hosts {:.1f} s: {} member(s) alive, --min-hosts {} needed ({}); giving up "
            "so that the job can be requeued",
            wait_s, alive, min_hosts, status.reason.empty() ? membership::to_string(status.phase) : status.reason);
        log::agent().error("{}", why);
        return finish(fail(why));
      }
    } else if (hosts_gate_ && held_for_hosts_ && now - origin_ >= *cfg_.wait_hosts) {
      release_for_hosts(fmt::format("--wait-hosts {:.1f} s passed with {} of --want-hosts {} in the view", wait_s,
                                    held_for_hosts_->size(), cfg_.want_hosts));
    }
    // Stalled below --min-hosts: the view cannot shrink further, and the lost hosts do not come back.
    const bool short_of_hosts =
        in_committed_view() && status.phase == membership::KeeperPhase::stalled && alive < min_hosts;
    if (!short_of_hosts) {
      short_of_hosts_since_.reset();
    } else if (!short_of_hosts_since_) {
      short_of_hosts_since_ = now;
    } else if (now - *short_of_hosts_since_ >= *cfg_.wait_hosts) {
      const std::string why = fmt::format(
          "stalled for --wait-hosts {:.1f} s with {} member(s) alive, below --min-hosts {} ({}); giving up so that the "
          "job can be requeued",
          wait_s, alive, min_hosts, status.reason);
      log::agent().error("{}", why);
      return finish(fail(why));
    }
    watch_hosts();
  });
}

bool Agent::hold_for_hosts(const membership::View& v) {
  if (cfg_.want_hosts == 0 || !hosts_gate_ || v.find(cfg_.name) == nullptr) return false;
  const bool waited = cfg_.wait_hosts && std::chrono::steady_clock::now() - origin_ >= *cfg_.wait_hosts;
  if (v.size() >= cfg_.want_hosts || waited) {
    hosts_gate_ = false;
    held_for_hosts_.reset();
    log::agent().info("epoch {} holds {} member(s), --want-hosts {}{}: handing it on", v.epoch(), v.size(),
                      cfg_.want_hosts, waited ? " (--wait-hosts passed)" : "");
    return false;
  }
  if (!held_for_hosts_) {
    log::agent().info("epoch {} holds {} of --want-hosts {}: waiting for more until --wait-hosts passes", v.epoch(),
                      v.size(), cfg_.want_hosts);
  }
  held_for_hosts_ = v;
  return true;
}

void Agent::release_for_hosts(const std::string& why) {
  if (!hosts_gate_) return;
  hosts_gate_ = false;
  log::agent().info("{}: going on with the view at hand", why);
  if (!held_for_hosts_) return;
  const membership::View v = std::move(*held_for_hosts_);
  held_for_hosts_.reset();
  on_gated_view(v);
}

}  // namespace shoal::daemon

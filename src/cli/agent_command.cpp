// `shoal agent`: runs one member until SIGTERM/SIGINT, then leaves gracefully. Reads its flags (agent_flags) into
// an AgentConfig, starts the Agent, prints the bound address on stdout for scripts, handles signals.
#include <unistd.h>

#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <cstdlib>
#include <iostream>

#include "base/log.hpp"
#include "cli/agent_flags.hpp"
#include "cli/cli.hpp"
#include "cli/compute_probe_cuda.hpp"
#include "cli/command_line.hpp"
#include "daemon/agent.hpp"
#include "launcher/worker_launcher.hpp"
#include "ops/agent_notify.hpp"
#include "ops/key_discovery.hpp"
#include "ops/notice_watcher.hpp"
#include "ops/slurm_env.hpp"

namespace shoal::cli {
namespace {

// SIGHUP: the log level that the command line and the config file give now (the file may have changed,
// the command line still wins), and the cluster key file again (a rotation step). `args` are the agent's
// flags as first given.
void reload_config(const std::vector<std::string>& args, bool has_config, daemon::Agent& agent,
                   ops::AgentNotifications& systemd) {
  systemd.reloading();
  std::string what = "no --config to reload";
  if (has_config) {
    AgentFlags flags;
    auto app = agent_app(flags);
    const auto parsed = parse_args(*app, args);
    if (!parsed) {
      what = "reload failed: " + parsed.error().message;
    } else if (const auto level = log_level_of(*app); !level) {
      what = "log level unchanged";
    } else {
      log::setup(log::parse_spec(*level).value());  // the flag's check has passed
      what = "log level " + *level;
    }
  }
  if (!agent.key_file().empty()) {
    const Status keys = agent.reload_keys();
    what += keys ? "; cluster key reloaded" : "; cluster key NOT reloaded (" + keys.error().message + ")";
  }
  log::get(log::Component::agent).info("SIGHUP: {}", what);
  systemd.reloaded(what);
}

// SIGTERM with --drain-on-sigterm, a spot notice: the trainers finish their step, save and end, and the agent
// leaves after them. False (after a warning) when there is nothing to drain from: the caller stops as without.
bool drain_or_warn(daemon::Agent& agent, std::chrono::milliseconds within, const std::string& why) {
  const Status drained = agent.drain(within, why);
  if (!drained) log::get(log::Component::agent).warn("{}: cannot drain ({}): stopping now", why, drained.error().message);
  return drained.ok();
}

}  // namespace

int agent_command(std::span<const std::string> command_line) {
  const AgentArgs split = split_agent_args(command_line);
  const std::vector<std::string>& args = split.flags;
  AgentFlags flags;
  auto app = agent_app(flags);
  if (auto done = parse_command(*app, args)) return *done;
  const bool has_config = app->get_config_ptr()->count() > 0;

  const auto usage_error = [](const std::string& message) {
    std::cerr << "shoal agent: " << message << " (see `shoal agent --help`)\n";
    return kExitUsage;
  };
  auto slurm = flags.no_slurm ? Result<ops::SlurmDefaults>(ops::SlurmDefaults{})
                              : ops::slurm_defaults(ops::process_environment());
  if (!slurm) return usage_error("Slurm environment: " + slurm.error().message + " (or run with --no-slurm)");
  if (slurm->under_slurm) {
    for (const auto& note : slurm->notes) log::get(log::Component::agent).info("under Slurm: {}", note);
  }
  apply_slurm_defaults(flags, *slurm);
  auto pod = flags.no_kubernetes ? Result<ops::KubernetesDefaults>(ops::KubernetesDefaults{})
                                 : ops::kubernetes_defaults(ops::process_environment());
  if (!pod) return usage_error("Kubernetes environment: " + pod.error().message + " (or run with --no-kubernetes)");
  if (pod->under_kubernetes) {
    for (const auto& note : pod->notes) log::get(log::Component::agent).info("under Kubernetes: {}", note);
  }
  apply_kubernetes_defaults(flags, *pod);
  {
    char host[256] = {};
    const bool named = ::gethostname(host, sizeof host - 1) == 0 && apply_host_name_default(flags, host);
    if (named) {
      log::get(log::Component::agent).info("member name {}: this machine's host name (--name sets another)", host);
    }
  }
  if (!flags.key_file && !flags.insecure) {
    if (auto found = ops::discover_key_file(ops::process_environment(), *slurm)) {
      log::get(log::Component::agent).info("cluster key from {}: {}", found->from, found->path);
      flags.key_file = found->path;
    }
  }
  auto cfg = agent_config(flags, *slurm);
  if (!cfg) return usage_error(cfg.error().message);
  const auto drain = drain_flags(flags);
  if (!drain) return usage_error(drain.error().message);
  cfg->drain_within = drain->within;
  cfg->compute_probe = host_compute_probe();  // cuBLAS where a GPU is usable, else OpenBLAS
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  auto launch =
      launch_config(flags, split.command, cfg->ckpt.job,
                    visible != nullptr && *visible != '\0' ? std::optional<std::string>(visible) : std::nullopt);
  if (!launch) return usage_error(launch.error().message);
  const std::string metrics_host = cfg->metrics ? cfg->metrics->host : std::string();

  std::signal(SIGPIPE, SIG_IGN);
  daemon::Agent agent(std::move(*cfg));
  ops::AgentNotifications systemd(agent, ops::SystemdNotifier::from_environment());
  systemd.attach();
  int exit_status = kExitOk;
  std::unique_ptr<launcher::WorkerLauncher> launcher;
  if (*launch) {
    launcher = std::make_unique<launcher::WorkerLauncher>(agent, std::move(**launch), [&](int status) {
      exit_status = status;
      systemd.stopping();
      agent.stop();
    });
    launcher->attach();
  }
  const auto stop = [&] {
    if (launcher) {
      launcher->shutdown();  // the workers first; it calls agent.stop() once they are gone
    } else {
      agent.stop();
    }
  };
  // Installed before start(), so a signal that arrives early still means a graceful stop.
  boost::asio::signal_set signals(agent.io(), SIGINT, SIGTERM, SIGHUP);
  int stops_seen = 0;
  std::function<void()> wait_signal = [&] {
    signals.async_wait([&](boost::system::error_code ec, int signal) {
      if (ec) return;
      if (signal == SIGHUP) {
        reload_config(args, has_config, agent, systemd);
      } else if (++stops_seen == 1) {
        systemd.stopping();
        if (!(signal == SIGTERM && drain->on_sigterm && drain_or_warn(agent, drain->within, "SIGTERM"))) stop();
      } else {
        agent.stop_now();
        return;
      }
      wait_signal();
    });
  };
  wait_signal();
  if (auto started = agent.start(); !started) {
    std::cerr << "shoal agent: " << started.error().message << "\n";
    return kExitFailure;
  }
  systemd.started();
  std::unique_ptr<ops::NoticeWatcher> notices;
  if (drain->notices) {
    notices = std::make_unique<ops::NoticeWatcher>(agent.io(), *drain->notices, [&](const std::string& why) {
      systemd.stopping();
      if (!drain_or_warn(agent, drain->within, why)) stop();
    });
    notices->start();
  }

  std::cout << "shoal agent " << agent.swim().self().name << " listening on " << agent.addr() << " control "
            << agent.control_path();
  if (agent.metrics_port() != 0) std::cout << " metrics " << metrics_host << ":" << agent.metrics_port();
  std::cout << std::endl;

  const Status outcome = agent.run();
  if (!outcome) {
    std::cerr << "shoal agent: " << outcome.error().message << "\n";
    return kExitFailure;
  }
  return exit_status;
}

}  // namespace shoal::cli

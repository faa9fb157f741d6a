// `shoal agent`: runs one member until SIGTERM/SIGINT, then leaves gracefully. Parses flags into an
// AgentConfig, starts the Agent, prints the bound address on stdout for scripts, handles signals.
#include <boost/asio/signal_set.hpp>
#include <charconv>
#include <csignal>
#include <cstdlib>
#include <iostream>

#include "base/log.hpp"
#include "base/member_name.hpp"
#include "ckpt_shm/shm_segment.hpp"
#include "cli/cli.hpp"
#include "cli/flags.hpp"
#include "cli/launch_flags.hpp"
#include "cli/seconds_text.hpp"
#include "control/socket_path.hpp"
#include "daemon/agent.hpp"
#include "launcher/worker_launcher.hpp"
#include "ops/agent_notify.hpp"
#include "ops/config_file.hpp"
#include "ops/slurm_env.hpp"

namespace shoal::cli {
namespace {

Result<std::chrono::milliseconds> parse_positive_seconds(const std::string& text) {
  auto s = parse_seconds(text, ZeroSeconds::refused, 86400.0 * 365);
  if (!s) return fail(s.error().message);
  return std::chrono::milliseconds(static_cast<int64_t>(*s * 1000.0 + 0.5));
}

// "1048576", "512M", "64G": bytes with an optional binary suffix.
Result<uint64_t> parse_byte_size(const std::string& text) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  const std::string_view rest(end, static_cast<size_t>(text.data() + text.size() - end));
  int shift = -1;
  if (rest.empty()) shift = 0;
  if (rest == "K" || rest == "k") shift = 10;
  if (rest == "M") shift = 20;
  if (rest == "G") shift = 30;
  if (rest == "T") shift = 40;
  if (ec != std::errc() || shift < 0 || v == 0 || v > (UINT64_MAX >> shift)) {
    return fail("'" + text + "' is not a positive size (bytes, or a number with K, M, G or T)");
  }
  return v << shift;
}

// SIGHUP: the config file's log-level applies again (unless `shoal --log-level` was given), and the
// cluster key file is read again (a rotation step).
void reload_config(const std::optional<std::string>& path, daemon::Agent& agent, ops::AgentNotifications& systemd) {
  systemd.reloading();
  std::string what = "no --config to reload";
  if (path) {
    auto file = ops::read_config_file(*path);
    if (!file) {
      what = "reload failed: " + file.error().message;
    } else if (!file->log_level || log_level_given()) {
      what = "log level unchanged";
    } else if (auto spec = log::parse_spec(*file->log_level); !spec) {
      what = "reload failed: " + *path + ": log-level: " + spec.error().message;
    } else {
      log::setup(*spec);
      what = "log level " + *file->log_level;
    }
  }
  if (!agent.key_file().empty()) {
    const Status keys = agent.reload_keys();
    what += keys ? "; cluster key reloaded" : "; cluster key NOT reloaded (" + keys.error().message + ")";
  }
  log::get(log::Component::agent).info("SIGHUP: {}", what);
  systemd.reloaded(what);
}

}  // namespace

int agent_command(std::span<const std::string> command_line) {
  std::optional<std::string> name, bind, seeds, cluster, control, join_timeout, advertise, config, metrics;
  bool no_slurm = false;
  std::optional<int64_t> slots, min_hosts, max_hosts;
  std::optional<std::string> hold_down, quorum_policy, job, ckpt_store, ckpt_budget, host;
  std::optional<std::string> ckpt_dir, key_file;
  std::optional<int64_t> ckpt_replicas, ckpt_dir_keep, ckpt_exit_wait;
  FlagSet flags(
      "shoal agent --name NAME --bind HOST:PORT [--seeds HOST:PORT,...] [--cluster ID] [--control PATH]\n"
      "       [-- COMMAND ARGS...]",
      "Run one member of a shoal cluster: SWIM gossip over UDP and TCP on one port, committed views\n"
      "agreed with the other members, in-memory checkpoints replicated to peer hosts, and a control\n"
      "socket (requests: members, view, view-force, stats, ckpt-ls, and the trainers' session-info,\n"
      "session-wait, ckpt-committed) for `shoal members`, `shoal view` and `shoal ckpt ls`. Once bound,\n"
      "prints one line:\n"
      "  shoal agent NAME listening on ADDR control PATH [metrics HOST:PORT]\n"
      "SIGTERM or SIGINT leaves the cluster gracefully and exits 0; a second signal exits at once;\n"
      "SIGHUP re-reads --config's log-level and --key-file.\n"
      "With `-- COMMAND ARGS...` the agent also runs one worker per slot with torchrun's environment for\n"
      "the committed view (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, ROLE_RANK,\n"
      "ROLE_WORLD_SIZE, ROLE_NAME, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RESTART_COUNT (the view's epoch\n"
      "- 1: the same on every host), TORCHELASTIC_MAX_RESTARTS, TORCHELASTIC_RUN_ID, CUDA_VISIBLE_DEVICES),\n"
      "prefixes their output lines with [rank N], restarts them at every view change (--workers restart)\n"
      "or lets them rebuild in place (--workers connect), and leaves with exit 0 once they all exit 0,\n"
      "or exit 1 after --max-restarts failures of their own. SIGTERM stops the workers, then leaves.\n"
      "Under Slurm (`srun --ntasks-per-node=1 shoal agent`) no flag is needed: the name comes from\n"
      "SLURMD_NODENAME, the peers from SLURM_STEP_NODELIST (at port 7946, also the default --bind),\n"
      "the cluster id and job from SLURM_JOB_ID, --slots from SLURM_GPUS_ON_NODE or\n"
      "CUDA_VISIBLE_DEVICES, --min-hosts from the step's node count; flags override them. Under\n"
      "systemd (Type=notify) it sends READY=1 once in a committed view, STATUS=, WATCHDOG=1 and\n"
      "STOPPING=1 (see packaging/shoal-agent.service).\n"
      "Exit status: 0 after a graceful stop, 1 on a runtime failure (port in use, control socket\n"
      "held by a live agent, join timeout), 2 on a usage error.");
  flags.add_string("name", "NAME", "member name, unique in the cluster and stable across restarts (required)", &name);
  flags.add_string("bind", "HOST:PORT",
                   "address of the UDP socket and TCP listener, the same port for both; port 0 lets the OS choose "
                   "(required)",
                   &bind);
  flags.add_string("seeds", "HOST:PORT,...",
                   "members to join through; retried until one answers. Without seeds the agent starts a new cluster",
                   &seeds);
  flags.add_string("cluster", "ID", "cluster id; packets and connections of other ids are refused (default: default)",
                   &cluster);
  flags.add_string("control", "PATH",
                   "control socket (default: /run/shoal/NAME.sock when writable, else "
                   "$XDG_RUNTIME_DIR/shoal/NAME.sock, else /tmp/shoal-UID/NAME.sock)",
                   &control);
  flags.add_string("join-timeout", "SECONDS", "exit 1 if no seed has answered within this time (default: keep trying)",
                   &join_timeout);
  flags.add_string("advertise", "HOST",
                   "address other members reach this one at (default: the --bind host; required when that is a "
                   "wildcard and the host name does not resolve)",
                   &advertise);
  flags.add_int("slots", "N", "GPU slots of this host: the ranks it runs (default: 1; 0 makes a witness)", &slots, 0,
                1024);
  flags.add_int("min-hosts", "N",
                "no committed view with fewer members: the first view forms once N members are alive, and a job "
                "that would shrink below N stalls instead (default: 1)",
                &min_hosts, 1, 100000);
  flags.add_int("max-hosts", "N", "at most N members in a view; further hosts wait as spares (default: no limit)",
                &max_hosts, 1, 100000);
  flags.add_string("hold-down", "SECONDS",
                   "a member removed from a view must stay alive this long before it is readmitted, so a bad link "
                   "costs one rebuild, not one every few seconds (default: 10)",
                   &hold_down);
  flags.add_string("quorum-policy", "majority|any",
                   "majority (default): a view change needs a majority of the last view, so a minority partition "
                   "stalls. any: every connected set of at least --min-hosts members may continue. RISK of `any`: "
                   "both sides of a partition continue as separate jobs (split brain); meant for 2-host jobs that "
                   "prefer availability",
                   &quorum_policy);

  flags.add_string("job", "NAME",
                   "the job's name: every checkpoint version carries it, and its shared-memory segments are "
                   "/dev/shm/shoal.NAME.* (letters, digits, '-', '_'; default: the cluster id)",
                   &job);
  flags.add_int("ckpt-replicas", "R", "peer hosts that keep a copy of each checkpoint version (default: 1)",
                &ckpt_replicas, 0, 16);
  flags.add_string("ckpt-budget", "BYTES",
                   "shared memory this host may hold in checkpoints, its ranks' own and peers' replicas; replicas "
                   "beyond it are dropped oldest first, never a rank's newest (suffixes K, M, G, T; default: no "
                   "limit)",
                   &ckpt_budget);
  flags.add_string("ckpt-dir", "DIR",
                   "also persist each local rank's newest checkpoint version to DIR/NAME/JOB/ (NAME: this member's "
                   "name, so hosts may share a network filesystem; written on a thread of its own, fsynced, renamed "
                   "into place; a save never waits for it); on SIGTERM persist what is not there yet before "
                   "exiting; at start load the newest version of each rank that memory lacks back into memory, "
                   "for restores (default: memory only)",
                   &ckpt_dir);
  flags.add_int("ckpt-dir-keep", "N", "steps of each rank kept in --ckpt-dir (default: 2)", &ckpt_dir_keep, 1, 1000);
  flags.add_int("ckpt-exit-wait", "SECONDS",
                "on SIGTERM, the longest wait for --ckpt-dir to receive the newest versions before exiting "
                "(default: 60; keep it below systemd's TimeoutStopSec and Slurm's KillWait)",
                &ckpt_exit_wait, 0, 3600);
  flags.add_string("host", "NAME",
                   "the machine this member runs on, as replica placement sees it: copies of a checkpoint never go "
                   "to the same host (default: the host name). Agents that share one machine but should act as "
                   "separate hosts (tests, demos) each give their own; their segments are then kept apart as "
                   "/dev/shm/shoal.JOB-NAME.*",
                   &host);
  flags.add_string("ckpt-store", "NAME",
                   "segment names on this host, /dev/shm/shoal.NAME.* (default: the job, or JOB-HOST with --host)",
                   &ckpt_store);

  flags.add_string("config", "PATH",
                   "read flags from PATH: `key = value` lines with the long flag names (min-hosts = 4), `#` "
                   "comments, and `log-level`; flags on the command line override it; SIGHUP re-reads its "
                   "log-level (see packaging/shoal-agent.conf.example)",
                   &config);
  flags.add_string("key-file", "PATH",
                   "the cluster key (`shoal keygen > PATH; chmod 600 PATH`, the same file on every host): every UDP "
                   "packet is sealed with it (XChaCha20-Poly1305) and every TCP connection opens with a sealed "
                   "hello; hosts without it are refused and never appear in a member list. Up to 4 keys, one per "
                   "line; the first seals, all open, so a key rotates without downtime: add the new key second "
                   "everywhere, SIGHUP; move it first, SIGHUP; remove the old, SIGHUP. Clocks must agree within 60 "
                   "s (replay window). Default: an open cluster (warned at start)",
                   &key_file);
  flags.add_string("metrics", "HOST:PORT",
                   "serve Prometheus metrics at http://HOST:PORT/metrics (members by state, view epoch, view-change "
                   "durations, probe round trips, traffic, refused input, checkpoints and replication lag; "
                   "default: none)",
                   &metrics);
  LaunchFlags launch_flags;
  launch_flags.add_to(flags);
  flags.add_bool("no-slurm", "ignore Slurm's environment (SLURM_JOB_ID, node lists, SLURMD_NODENAME, GPUs)", &no_slurm);

  const auto usage_error = [](const std::string& message) {
    std::cerr << "shoal agent: " << message << " (see `shoal agent --help`)\n";
    return kExitUsage;
  };
  // The config file's flags go first, so that the command line's override them.
  std::vector<std::string> args;
  const auto config_path = ops::config_path_in(command_line);
  if (config_path) {
    auto file = ops::read_config_file(*config_path);
    if (!file) return usage_error(file.error().message);
    if (file->log_level && !log_level_given()) {
      auto spec = log::parse_spec(*file->log_level);
      if (!spec) return usage_error(*config_path + ": log-level: " + spec.error().message);
      log::setup(*spec);
    }
    args = std::move(file->args);
  }
  args.insert(args.end(), command_line.begin(), command_line.end());
  auto parsed = flags.parse(args);
  if (!parsed) return usage_error(parsed.error().message);
  if (parsed->help) {
    std::cout << flags.help();
    return kExitOk;
  }
  if (!parsed->positional.empty()) return usage_error("unexpected argument '" + parsed->positional.front() + "'");
  auto slurm =
      no_slurm ? Result<ops::SlurmDefaults>(ops::SlurmDefaults{}) : ops::slurm_defaults(ops::process_environment());
  if (!slurm) return usage_error("Slurm environment: " + slurm.error().message + " (or run with --no-slurm)");
  if (slurm->under_slurm) {
    for (const auto& note : slurm->notes) log::get(log::Component::agent).info("under Slurm: {}", note);
    if (!name && !slurm->name.empty()) name = slurm->name;
    if (!bind) bind = "0.0.0.0:" + std::to_string(ops::kSlurmPort);
    if (!cluster) cluster = slurm->cluster;
    if (!job) job = slurm->job;
    if (!slots && slurm->slots) slots = *slurm->slots;
    if (!min_hosts && slurm->min_hosts) min_hosts = *slurm->min_hosts;
  }
  if (!name) return usage_error("--name is required");
  if (!bind) return usage_error("--bind is required");

  daemon::AgentConfig cfg;
  if (auto ok = check_member_name(*name); !ok) return usage_error("--name: " + ok.error().message);
  cfg.name = *name;
  auto bind_hp = parse_host_port(*bind, net::PortZero::allowed);
  if (!bind_hp) return usage_error("--bind: " + bind_hp.error().message);
  cfg.bind = *bind_hp;
  if (seeds) {
    auto list = net::parse_host_port_list(*seeds);
    if (!list) return usage_error("--seeds: " + list.error().message);
    cfg.seeds = *list;
  } else if (slurm->under_slurm) {
    // Every other node of the step, at this agent's port: all agents of a step bind the same one.
    cfg.seeds = ops::slurm_seeds(*slurm, cfg.name, cfg.bind.port);
    if (!cfg.seeds.empty() && cfg.bind.port == 0) {
      return usage_error("under Slurm the seeds are the other nodes at this agent's port: --bind needs a fixed port");
    }
  }
  cfg.gossip.cluster_id = cluster ? *cluster : "default";
  if (cfg.gossip.cluster_id.empty()) return usage_error("--cluster must not be empty");
  if (join_timeout) {
    auto t = parse_positive_seconds(*join_timeout);
    if (!t) return usage_error("--join-timeout: " + t.error().message);
    cfg.join_timeout = *t;
  }
  if (advertise) {
    if (advertise->empty()) return usage_error("--advertise must not be empty");
    cfg.advertise_host = *advertise;
  }
  cfg.meta.slots = static_cast<uint32_t>(slots.value_or(1));
  cfg.membership.min_hosts = static_cast<uint32_t>(min_hosts.value_or(1));
  cfg.membership.max_hosts = static_cast<uint32_t>(max_hosts.value_or(0));
  if (max_hosts && min_hosts && *max_hosts < *min_hosts) return usage_error("--max-hosts is below --min-hosts");
  if (hold_down) {
    auto t = parse_positive_seconds(*hold_down);
    if (!t) return usage_error("--hold-down: " + t.error().message);
    cfg.membership.hold_down = std::chrono::duration_cast<gossip::Time>(*t);
  }
  if (quorum_policy) {
    if (*quorum_policy == "majority") {
      cfg.membership.policy = membership::QuorumPolicy::majority;
    } else if (*quorum_policy == "any") {
      cfg.membership.policy = membership::QuorumPolicy::any;
    } else {
      return usage_error("--quorum-policy must be majority or any, not '" + *quorum_policy + "'");
    }
  }
  cfg.ckpt.job = job ? *job : cfg.gossip.cluster_id;
  if (auto ok = ckpt::check_job_name(cfg.ckpt.job); !ok) {
    return usage_error(std::string(job ? "--job: " : "the cluster id is no job name; set --job: ") +
                       ok.error().message);
  }
  if (host) {
    if (host->empty()) return usage_error("--host must not be empty");
    cfg.meta.host = *host;
  }
  cfg.ckpt.store = ckpt_store ? *ckpt_store : host ? ckpt::store_for_host(cfg.ckpt.job, *host) : cfg.ckpt.job;
  if (auto ok = ckpt::check_job_name(cfg.ckpt.store); !ok) return usage_error("--ckpt-store: " + ok.error().message);
  cfg.ckpt.replicas = static_cast<uint32_t>(ckpt_replicas.value_or(1));
  if (ckpt_budget) {
    auto bytes = parse_byte_size(*ckpt_budget);
    if (!bytes) return usage_error("--ckpt-budget: " + bytes.error().message);
    cfg.ckpt.budget_bytes = *bytes;
  }
  if (ckpt_dir) {
    if (ckpt_dir->empty()) return usage_error("--ckpt-dir must not be empty");
    cfg.ckpt.persist_dir = *ckpt_dir;
  } else if (ckpt_dir_keep || ckpt_exit_wait) {
    return usage_error("--ckpt-dir-keep and --ckpt-exit-wait need --ckpt-dir");
  }
  cfg.ckpt.persist_keep = static_cast<uint32_t>(ckpt_dir_keep.value_or(2));
  cfg.persist_exit_wait = std::chrono::seconds(ckpt_exit_wait.value_or(60));
  if (key_file) {
    if (key_file->empty()) return usage_error("--key-file must not be empty");
    cfg.key_file = *key_file;
  }
  if (metrics) {
    auto hp = parse_host_port(*metrics, net::PortZero::allowed);
    if (!hp) return usage_error("--metrics: " + hp.error().message);
    cfg.metrics = *hp;
  }
  cfg.control_path = control ? *control : control::default_control_path(cfg.name, control::probe_control_dirs());
  if (cfg.control_path.empty()) return usage_error("--control must not be empty");
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  auto launch =
      launch_flags.config(parsed->after_dash, cfg.ckpt.job,
                          visible != nullptr && *visible != '\0' ? std::optional<std::string>(visible) : std::nullopt);
  if (!launch) return usage_error(launch.error().message);
  const std::string metrics_host = cfg.metrics ? cfg.metrics->host : std::string();

  std::signal(SIGPIPE, SIG_IGN);
  daemon::Agent agent(std::move(cfg));
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
  // Installed before start(), so a signal that arrives early still means a graceful stop.
  boost::asio::signal_set signals(agent.io(), SIGINT, SIGTERM, SIGHUP);
  int stops_seen = 0;
  std::function<void()> wait_signal = [&] {
    signals.async_wait([&](boost::system::error_code ec, int signal) {
      if (ec) return;
      if (signal == SIGHUP) {
        reload_config(config_path, agent, systemd);
      } else if (++stops_seen == 1) {
        systemd.stopping();
        if (launcher) {
          launcher->shutdown();  // the workers first; it calls agent.stop() once they are gone
        } else {
          agent.stop();
        }
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

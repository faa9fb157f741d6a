// The flags of `shoal agent` (CLI11 options with their help and value checks, and the config file that
// may hold them) and the configuration they make: the member's AgentConfig and, with `-- COMMAND`, the
// LaunchConfig of its workers. Checks of one value belong to its flag; those of several flags (and of
// Slurm's defaults) to agent_config() and launch_config().
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "daemon/agent.hpp"
#include "launcher/worker_launcher.hpp"
#include "ops/kubernetes_env.hpp"
#include "ops/notice_watcher.hpp"
#include "ops/slurm_env.hpp"

namespace shoal::cli {

// The values given, each checked on its own; unset when neither the command line nor the config file gave it.
struct AgentFlags {
  // The member and its cluster.
  std::optional<std::string> name, bind, seeds, cluster, advertise, quorum_policy;
  std::optional<double> join_timeout_s, hold_down_s, hold_down_max_s, wait_hosts_s, join_window_s;
  std::optional<int64_t> slots, min_hosts, max_hosts, want_hosts, join_window_from;
  // Node health: eviction of stragglers.
  bool evict_stragglers = false;
  std::optional<double> evict_after_s, evict_window_s, evict_hold_down_s;
  // Checkpoints.
  std::optional<std::string> job, host, ckpt_store, ckpt_dir;
  std::optional<uint64_t> ckpt_budget_bytes;
  std::optional<int64_t> ckpt_replicas, ckpt_dir_keep, ckpt_exit_wait_s, ckpt_replicate_duty;
  // Operation.
  std::optional<std::string> control, control_group, key_file, metrics;
  bool no_slurm = false;
  bool no_kubernetes = false;
  bool ckpt_keep_on_exit = false;  // leave /dev/shm as it is after a graceful leave
  bool insecure = false;  // run with no cluster key: every host that reaches the port may join
  bool precheck = false;  // the pre-flight check before the first view is handed on
  bool precheck_exclude = false;  // and the hosts it flags excluded from that view
  std::optional<double> precheck_factor, precheck_wait_s;
  // The workers of `-- COMMAND`.
  std::optional<std::string> workers, run_id, role, devices;
  std::optional<double> worker_stop_timeout_s, failure_grace_s;
  std::optional<int64_t> max_restarts, master_port;
  bool local_rank_arg = false;
  // Drain: leave at a step boundary (`shoal drain`, SIGTERM with --drain-on-sigterm, a cloud's spot notice).
  bool drain_on_sigterm = false;
  std::optional<double> drain_within_s;
  std::optional<std::string> drain_on, drain_notice_url;
};

// How this agent drains: the deadline of a drain that SIGTERM or a notice starts, and what starts one.
struct DrainFlags {
  bool on_sigterm = false;
  std::chrono::milliseconds within{60'000};
  std::optional<ops::NoticeWatcherConfig> notices;  // --drain-on: the watcher of the cloud's notice
};
Result<DrainFlags> drain_flags(const AgentFlags& flags);

// `shoal agent FLAGS... -- COMMAND ARGS...`: the first `--` ends the flags; what follows is the workers'
// command, never read as flags (CLI11 sees only `flags`).
struct AgentArgs {
  std::vector<std::string> flags, command;
};
AgentArgs split_agent_args(std::span<const std::string> args);

// The App of `shoal agent` (command_app) with every flag bound to `flags`, and --config.
std::unique_ptr<CLI::App> agent_app(AgentFlags& flags);

// What Slurm's environment gives, where the flags do not: name, bind, cluster, job, slots, min-hosts.
void apply_slurm_defaults(AgentFlags& flags, const ops::SlurmDefaults& slurm);
// What a Kubernetes pod's environment gives (ops/kubernetes_env.hpp), where neither the flags nor Slurm's
// environment did: name, bind, advertise, cluster, job, host (the failure domain), slots.
void apply_kubernetes_defaults(AgentFlags& flags, const ops::KubernetesDefaults& pod);
// Without --name (and without Slurm's SLURMD_NODENAME), the member is named after `host_name` (this machine's
// host name, as serf and Consul name theirs). Returns whether it did; a host name that is no valid member name
// is refused later by agent_config, with the advice to give --name.
bool apply_host_name_default(AgentFlags& flags, const std::string& host_name);

// The member's configuration; errors name the flags involved (a missing --name or --bind, --max-hosts below
// --min-hosts, checkpoint flags without --ckpt-dir, ...). `slurm` gives the seeds when --seeds is not set.
Result<daemon::AgentConfig> agent_config(const AgentFlags& flags, const ops::SlurmDefaults& slurm);

// The workers' configuration for `command` (what follows `--`); nullopt without one, and then no worker flag
// may be given. `job` is the default run id; `visible_devices` is the agent's CUDA_VISIBLE_DEVICES, if any
// (the physical ids of its slots).
Result<std::optional<launcher::LaunchConfig>> launch_config(const AgentFlags& flags,
                                                            const std::vector<std::string>& command,
                                                            const std::string& job,
                                                            const std::optional<std::string>& visible_devices);

}  // namespace shoal::cli

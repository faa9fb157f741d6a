// The flags of `shoal agent`: their help, value checks and groups; Slurm's defaults; the AgentConfig and
// LaunchConfig they make.
#include "cli/agent_flags.hpp"

#include <algorithm>

#include "base/member_name.hpp"
#include "ckpt_shm/shm_capacity.hpp"
#include "ckpt_shm/shm_segment.hpp"
#include "cli/command_line.hpp"
#include "cli/flag_values.hpp"
#include "control/socket_path.hpp"
#include "launcher/worker_process.hpp"
#include "net/host_port.hpp"
#include "ops/config_file.hpp"
#include "wire/cluster_key.hpp"

namespace shoal::cli {
namespace {

constexpr double kYear_s = 86400.0 * 365;
constexpr double kDay_s = 86400.0;

CLI::Option* text(CLI::App& app, const std::string& name, const std::string& value_name, const std::string& help,
                  std::optional<std::string>& target) {
  return app.add_option("--" + name, target, help)->type_name(value_name);
}

CLI::Option* number(CLI::App& app, const std::string& name, const std::string& value_name, const std::string& help,
                    std::optional<int64_t>& target, int64_t min_value, int64_t max_value) {
  return app.add_option("--" + name, target, help)->type_name(value_name)->check(whole_number(min_value, max_value));
}

CLI::Option* duration(CLI::App& app, const std::string& name, const std::string& help, std::optional<double>& target,
                      ZeroSeconds zero, double max_seconds) {
  return app.add_option("--" + name, target, help)->type_name("SECONDS")->transform(seconds(zero, max_seconds));
}

void add_member_flags(CLI::App& app, AgentFlags& f) {
  app.option_defaults()->group("Member and cluster");
  text(app, "name", "NAME",
       "member name, unique in the cluster and stable across restarts; default: SLURMD_NODENAME under Slurm, "
       "SHOAL_POD_NAME under Kubernetes, else this machine's host name (the first log line says which)",
       f.name)
      ->check(checked_by(check_member_name));
  text(app, "bind", "HOST:PORT",
       "address of the UDP socket and TCP listener, the same port for both; port 0 lets the OS choose. Required, "
       "except under Slurm, where it is 0.0.0.0:7946 (also in a Kubernetes pod)",
       f.bind)
      ->check(checked_by([](const std::string& v) { return net::parse_host_port(v, net::PortZero::allowed); }));
  text(app, "seeds", "HOST:PORT,...",
       "members to join through, comma-separated; three at a time, retried with backoff until one answers. A "
       "name is looked up in the background, all its addresses, again while it does not resolve (never fatal), "
       "every 5 s while the agent has no committed view or one below --min-hosts, and every 10 minutes after. "
       "dns+srv:NAME takes the members from NAME's DNS SRV records (their targets and ports), as a Kubernetes "
       "headless Service publishes them. Without seeds the agent starts a new cluster",
       f.seeds)
      ->check(checked_by([](const std::string& v) { return net::parse_host_port_list(v); }));
  text(app, "cluster", "ID", "cluster id; packets and connections of other ids are refused (default: default)",
       f.cluster)
      ->check(not_empty());
  text(app, "advertise", "HOST",
       "address other members reach this one at (default: the --bind host; required when that is a wildcard and "
       "the host name does not resolve)",
       f.advertise)
      ->check(not_empty());
  duration(app, "join-timeout",
           "exit 1 if this host is still alone with no committed view after this time: no seed answered, or the "
           "members it heard of left before a view formed (default: keep trying)",
           f.join_timeout_s, ZeroSeconds::refused, kYear_s);
  number(app, "slots", "N", "GPU slots of this host: the ranks it runs (default: 1; 0 makes a witness)", f.slots, 0,
         1024);
  number(app, "min-hosts", "N",
         "no committed view with fewer members: the first view forms once N members are alive, and a job that "
         "would shrink below N stalls instead (default: 1)",
         f.min_hosts, 1, 100000);
  number(app, "max-hosts", "N", "at most N members in a view; further hosts wait as spares (default: no limit)",
         f.max_hosts, 1, 100000);
  duration(app, "wait-hosts",
           "give up (exit 1, the reason in the log) when no committed view has formed after this long, or when a "
           "view stalls with fewer than --min-hosts members alive for this long, so that a scheduler can requeue "
           "the job (default: wait for ever)",
           f.wait_hosts_s, ZeroSeconds::refused, kYear_s);
  number(app, "want-hosts", "N",
         "with --wait-hosts T: hand the first view to the trainers once it holds N members, or after T with at least "
         "--min-hosts (default: the first view, as soon as --min-hosts are alive)",
         f.want_hosts, 1, 100000);
  duration(app, "hold-down",
           "a member removed from a view must stay alive this long before it is readmitted, so a bad link costs one "
           "rebuild, not one every few seconds (default: 10)",
           f.hold_down_s, ZeroSeconds::refused, kYear_s);
  duration(app, "hold-down-max",
           "a host that keeps failing (dead, or restarted by systemd or Slurm as a new process) is held down longer "
           "each time: the hold-down doubles per failure in a row (a failure within an hour of the last), up to "
           "this; a restart after a single failure is admitted at once (default: 600)",
           f.hold_down_max_s, ZeroSeconds::refused, kYear_s);
  duration(app, "join-window",
           "in a view of --join-window-from members or more, a view that only adds members waits until this long "
           "after the last view change, so hosts arriving over a minute join in a few views (each one rebuilds every "
           "rank's communicator) instead of one each; joiners go at once with any other change (0: every join as "
           "soon as it settles; default: 10)",
           f.join_window_s, ZeroSeconds::allowed, kYear_s);
  number(app, "join-window-from", "N", "the view size from which --join-window applies (default: 32)",
         f.join_window_from, 1, 100000);
  text(app, "quorum-policy", "majority|any",
       "majority (default): a view change needs a majority of the last view, so a minority partition stalls. any: "
       "every connected set of at least --min-hosts members may continue. RISK of `any`: both sides of a partition "
       "continue as separate jobs (split brain); meant for 2-host jobs that prefer availability",
       f.quorum_policy)
      ->check(one_of({"majority", "any"}));
}

void add_health_flags(CLI::App& app, AgentFlags& f) {
  app.option_defaults()->group("Node health");
  app.add_flag("--evict-stragglers", f.evict_stragglers,
               "remove a host from the next committed view when this agent's straggler verdict (its local trainer's, "
               "measured on the job's own steps; identical on every rank) has named it for --evict-after, through the "
               "ordinary majority path: never below --min-hosts, at most one host per --evict-window, and only when "
               "every survivor's own verdict named it too. The evicted host stays alive out of views and is readmitted "
               "after --evict-hold-down. Needs the cluster key (the figures are sealed with it) and trainers that "
               "report their verdict: embedded agents, and trainers connected to this agent (health-report). Off by "
               "default")
      ->group("Node health");
  duration(app, "evict-after", "with --evict-stragglers: how long the verdict must name a host without a break (default: 3)",
           f.evict_after_s, ZeroSeconds::refused, kDay_s);
  duration(app, "evict-window", "with --evict-stragglers: at most one eviction per this many seconds (default: 60)",
           f.evict_window_s, ZeroSeconds::refused, kDay_s);
  duration(app, "evict-hold-down",
           "with --evict-stragglers: an evicted host is readmitted only after this long alive out of the view, "
           "whatever its generation (default: 60; at least --hold-down)",
           f.evict_hold_down_s, ZeroSeconds::refused, kYear_s);
}

void add_checkpoint_flags(CLI::App& app, AgentFlags& f) {
  app.option_defaults()->group("Checkpoints");
  const auto job_name = checked_by([](const std::string& v) { return ckpt::check_job_name(v); });
  text(app, "job", "NAME",
       "the job's name: every checkpoint version carries it, and its shared-memory segments are /dev/shm/shoal.NAME.* "
       "(letters, digits, '-', '_'; default: the cluster id, with segments /dev/shm/shoal.ID-LINEAGE.* that belong to "
       "this cluster alone: LINEAGE is set by its first view, so a new cluster never sees an earlier run's)",
       f.job)
      ->check(job_name);
  number(app, "ckpt-replicas", "R", "peer hosts that keep a copy of each checkpoint version (default: 1)",
         f.ckpt_replicas, 0, 16);
  number(app, "ckpt-replicate-duty", "PERCENT",
         "the share of the time replication may stream: after a push that took t of CPU time it rests "
         "t * (100 - PERCENT) / PERCENT, then sends the newest version saved meanwhile (latest wins; the ones in between are skipped). "
         "Bounds what replicating every step takes from trainers (default: 20; 100: no rest)",
         f.ckpt_replicate_duty, 1, 100);
  app.add_option("--ckpt-budget", f.ckpt_budget_bytes,
                 "shared memory this host may hold in checkpoints, its ranks' own and peers' replicas; replicas beyond "
                 "it are dropped oldest first, never a rank's newest (suffixes K, M, G, T; default: half of /dev/shm's size)")
      ->type_name("BYTES")
      ->transform(byte_size());
  text(app, "ckpt-dir", "DIR",
       "also persist each local rank's newest checkpoint version to DIR/NAME/JOB/ (NAME: this member's name, so "
       "hosts may share a network filesystem; written on a thread of its own, fsynced, renamed into place; a save "
       "never waits for it); on SIGTERM persist what is not there yet before exiting; at start load the newest "
       "version of each rank that memory lacks back into memory, for restores (default: memory only)",
       f.ckpt_dir)
      ->check(not_empty());
  number(app, "ckpt-dir-keep", "N", "steps of each rank kept in --ckpt-dir (default: 2)", f.ckpt_dir_keep, 1, 1000);
  number(app, "ckpt-exit-wait", "SECONDS",
         "on SIGTERM, the longest wait for --ckpt-dir to receive the newest versions before exiting (default: 60; "
         "keep it below systemd's TimeoutStopSec and Slurm's KillWait)",
         f.ckpt_exit_wait_s, 0, 3600);
  app.add_flag("--ckpt-keep-on-exit", f.ckpt_keep_on_exit,
               "keep this host's checkpoint segments in /dev/shm when the agent leaves on purpose (SIGTERM, scancel, "
               "systemctl stop), for an agent that restarts into the same job. Default: a graceful leave removes "
               "them, its ranks' slots and the replicas it kept for peers; after a crash they stay until a "
               "restarted agent adopts them or `shoal ckpt gc` removes them")
      ->group("Checkpoints");
  text(app, "host", "NAME",
       "the machine this member runs on, as replica placement sees it: copies of a checkpoint never go to the same "
       "host (default: the host name). Agents that share one machine but should act as separate hosts (tests, "
       "demos) each give their own; their segments are then kept apart as /dev/shm/shoal.JOB-NAME.*",
       f.host)
      ->check(not_empty());
  text(app, "ckpt-store", "NAME",
       "segment names on this host, /dev/shm/shoal.NAME.* (default: the job, or JOB-HOST with --host; followed by "
       "-LINEAGE when no --job is given)",
       f.ckpt_store)
      ->check(job_name);
}

void add_worker_flags(CLI::App& app, AgentFlags& f) {
  app.option_defaults()->group("Workers (with `-- COMMAND ARGS...`)");
  text(app, "workers", "restart|connect",
       "restart (default) stops and starts the workers at every committed view change with the new ranks, as "
       "torchrun does, for scripts that cannot rebuild in place; connect starts them once and lets them follow "
       "views themselves (they link libshoal and call Session::connect, which finds this agent through "
       "SHOAL_CONTROL and SHOAL_SLOT, which restart mode sets too)",
       f.workers)
      ->check(one_of({"restart", "connect"}));
  number(app, "max-restarts", "N",
         "restarts after the workers' own failures (not ones a view change explains) before this host leaves the "
         "cluster and exits 1 (default: 3); passed on as TORCHELASTIC_MAX_RESTARTS",
         f.max_restarts, 0, 1000000);
  number(app, "master-port", "PORT",
         "MASTER_PORT of the workers: the same on every host, so whichever host holds rank 0 after a view change, "
         "the workers find its store there (default: 29500)",
         f.master_port, 1, 65535);
  text(app, "run-id", "ID", "TORCHELASTIC_RUN_ID of the workers (default: the job name)", f.run_id)->check(not_empty());
  text(app, "role", "NAME", "ROLE_NAME of the workers (default: default)", f.role)->check(not_empty());
  text(app, "devices", "all|slot|inherit",
       "CUDA_VISIBLE_DEVICES of the workers: all (default) lists this host's devices and each worker picks its own "
       "with LOCAL_RANK, as torchrun scripts do; slot shows each worker only its slot's device (as cuda:0); inherit "
       "leaves the variable as the agent has it. The device ids are this agent's CUDA_VISIBLE_DEVICES when set "
       "(Slurm's allocation), else 0..slots-1",
       f.devices)
      ->check(one_of({"all", "slot", "inherit"}));
  app.add_flag("--local-rank-arg", f.local_rank_arg,
               "also pass --local-rank=N to each worker (torch.distributed.launch's convention)");
  duration(app, "worker-stop-timeout", "how long a worker may take to exit after SIGTERM before SIGKILL (default: 15)",
           f.worker_stop_timeout_s, ZeroSeconds::allowed, kDay_s);
  duration(app, "failure-grace",
           "after a worker fails, how long to wait for a view change that explains it (a lost peer) before counting "
           "it as the workers' own failure (default: 5)",
           f.failure_grace_s, ZeroSeconds::allowed, kDay_s);
}

void add_drain_flags(CLI::App& app, AgentFlags& f) {
  app.option_defaults()->group("Drain");
  app.add_flag("--drain-on-sigterm", f.drain_on_sigterm,
               "SIGTERM drains instead of stopping the workers at once: the trainers finish their step, save, "
               "wait until a peer holds it, and the host leaves at that step boundary (--workers connect; a second "
               "signal stops at once)")
      ->group("Drain");
  duration(app, "drain-within",
           "the deadline of a drain that SIGTERM, a spot notice or `shoal drain` without --within starts: after "
           "it the host leaves anyway (default: 60)",
           f.drain_within_s, ZeroSeconds::refused, 3600);
  text(app, "drain-on", "aws|gcp|azure",
       "watch the cloud's spot/preemption notice (AWS instance-action, GCP preempted, Azure Scheduled Events "
       "Preempt) and drain when it comes",
       f.drain_on)
      ->check(one_of({"aws", "gcp", "azure"}));
  text(app, "drain-notice-url", "URL",
       "with --drain-on: the metadata service's base URL, http://HOST[:PORT] (default: the cloud's own; tests point "
       "it at a local server)",
       f.drain_notice_url)
      ->check(not_empty());
}

void add_operation_flags(CLI::App& app, AgentFlags& f) {
  app.option_defaults()->group("Operation");
  text(app, "control", "PATH",
       "control socket (default: /run/shoal/NAME.sock when writable, else $XDG_RUNTIME_DIR/shoal/NAME.sock, else "
       "/tmp/shoal-UID/NAME.sock)",
       f.control)
      ->check(not_empty());
  text(app, "control-group", "GROUP",
       "give the control socket to this group (mode 0660), so that users in the group can query and follow the "
       "agent (under the systemd unit the agent runs as root). Queries are open to the group; what changes state "
       "(a trainer's ckpt-committed, peer-lost, health-report and trainer-stats, and check) needs the agent's user, "
       "its group or root; view-force the agent's user or root (default: the agent's own group)",
       f.control_group)
      ->check(not_empty());
  ops::add_config_flag(app,
                       "read flags from PATH: `key = value` lines with the long flag names (min-hosts = 4, no-slurm = "
                       "true), `#` comments, and log-level; flags on the command line override it; SIGHUP re-reads "
                       "its log-level (see packaging/shoal-agent.conf.example)")
      ->group("Operation");
  text(app, "key-file", "PATH",
       "the cluster key (`shoal keygen > PATH; chmod 600 PATH`, the same file on every host): every UDP packet is "
       "sealed with it (XChaCha20-Poly1305) and every TCP connection opens with a sealed hello; hosts without it are "
       "refused and never appear in a member list. Up to 4 keys, one per line; the first seals, all open, so a key "
       "rotates without downtime: add the new key second everywhere, SIGHUP; move it first, SIGHUP; remove the old, "
       "SIGHUP. Clocks must agree within 60 s (replay window). Without it the agent looks in $SHOAL_KEY_FILE, "
       "the systemd credential cluster.key ($CREDENTIALS_DIRECTORY), and under Slurm ~/.shoal/job-$SLURM_JOB_ID.key; "
       "with no key anywhere it refuses to start unless --insecure",
       f.key_file)
      ->check(not_empty())
      ->check(checked_by([](const std::string& path) { return wire::load_key_file(path); }));
  app.add_flag("--insecure", f.insecure,
               "run with no cluster key: any host that reaches the port can join, read the member list and the "
               "checkpoints, and send views. For a network you trust entirely (a laptop, a test)")
      ->group("Operation");
  text(app, "metrics", "HOST:PORT",
       "serve Prometheus metrics at http://HOST:PORT/metrics (members by state, view epoch, view-change durations, "
       "probe round trips, traffic, refused input, checkpoints and replication lag; default: none)",
       f.metrics)
      ->check(checked_by([](const std::string& v) { return net::parse_host_port(v, net::PortZero::allowed); }));
  app.add_flag("--precheck", f.precheck,
               "run the pre-flight check of `shoal check` once, on the first committed view that includes this "
               "member, before that view is handed to the workers: the view's first member coordinates it, the "
               "others wait for its word (at most --precheck-wait). Flagged hosts are logged as warnings; the job "
               "starts anyway")
      ->group("Operation");
  app.add_flag("--precheck-exclude", f.precheck_exclude,
               "--precheck, and the hosts it flags are excluded from the first view before it is handed to the "
               "workers (a view change, as `shoal view exclude`; `shoal view readmit` lets them back), unless that "
               "would exclude a majority of the view or leave fewer than --min-hosts: then they are logged only")
      ->group("Operation");
  app.add_option("--precheck-factor", f.precheck_factor,
                 "the precheck flags a host whose compute lies outside this factor of the median, and a link below "
                 "the median bandwidth divided by it (default 1.5)")
      ->type_name("F")
      ->check(CLI::Range(1.01, 100.0))
      ->group("Operation");
  duration(app, "precheck-wait",
           "how long the workers wait for the precheck at most before starting anyway (default 30)", f.precheck_wait_s,
           ZeroSeconds::refused, 600)
      ->group("Operation");
  app.add_flag("--no-slurm", f.no_slurm,
               "ignore Slurm's environment (SLURM_JOB_ID, node lists, SLURMD_NODENAME, GPUs)");
  app.add_flag("--no-kubernetes", f.no_kubernetes,
               "ignore a Kubernetes pod's environment (SHOAL_POD_NAME, SHOAL_NODE_NAME, SHOAL_JOB, SHOAL_POD_IP, "
               "NVIDIA_VISIBLE_DEVICES)");
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t end = std::min(text.find(',', begin), text.size());
    if (end > begin) out.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

std::chrono::milliseconds milliseconds(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0 + 0.5));
}

}  // namespace

AgentArgs split_agent_args(std::span<const std::string> args) {
  const auto dash = std::find(args.begin(), args.end(), "--");
  return {{args.begin(), dash}, {dash == args.end() ? dash : dash + 1, args.end()}};
}

std::unique_ptr<CLI::App> agent_app(AgentFlags& flags) {
  auto app = command_app(
      "shoal agent",
      "shoal agent [--name NAME] --bind HOST:PORT [--seeds HOST:PORT,...] [flags] [-- COMMAND ARGS...]\n"
      "shoal agent --config PATH [flags] [-- COMMAND ARGS...]\n"
      "srun --ntasks-per-node=1 shoal agent [flags] [-- COMMAND ARGS...]",
      "Run one member of a shoal cluster: SWIM gossip over UDP and TCP on one port, committed views\n"
      "agreed with the other members, in-memory checkpoints replicated to peer hosts, and a control\n"
      "socket (requests: members, view, view-force, drain, stats, ckpt-ls, status, view-history, health, check,\n"
      "and the trainers' session-info, session-wait, ckpt-committed, ckpt-safe, peer-lost, drained, trainer-stats)\n"
      "for `shoal members`, `shoal view`, `shoal drain` and `shoal ckpt ls`. Once bound,\n"
      "prints one line:\n"
      "  shoal agent NAME listening on ADDR control PATH [metrics HOST:PORT]\n"
      "SIGTERM or SIGINT leaves the cluster gracefully and exits 0; a second signal exits at once;\n"
      "SIGHUP re-reads --config's log-level and --key-file.\n"
      "With `-- COMMAND ARGS...` the agent also runs one worker per slot with torchrun's environment for\n"
      "the committed view (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, ROLE_RANK,\n"
      "ROLE_WORLD_SIZE, ROLE_NAME, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RESTART_COUNT (the view's epoch\n"
      "- 1: the same on every host), TORCHELASTIC_MAX_RESTARTS, TORCHELASTIC_RUN_ID, CUDA_VISIBLE_DEVICES,\n"
      "and SHOAL_CONTROL and SHOAL_SLOT, with which a worker finds this agent: shoal.torch.Checkpointer),\n"
      "prefixes their output lines with [rank N], restarts them at every view change (--workers restart)\n"
      "or lets them rebuild in place (--workers connect), and leaves with exit 0 once they all exit 0,\n"
      "or exit 1 after --max-restarts failures of their own. SIGTERM stops the workers, then leaves\n"
      "(with --drain-on-sigterm it drains: the trainers finish the step, save, a peer holds it, then leave).\n"
      "Under Slurm (`srun --ntasks-per-node=1 shoal agent`) no flag is needed: the name comes from\n"
      "SLURMD_NODENAME, the peers from SLURM_STEP_NODELIST (at port 7946, also the default --bind),\n"
      "the cluster id and job from SLURM_JOB_ID, --slots from SLURM_GPUS_ON_NODE or\n"
      "CUDA_VISIBLE_DEVICES, --min-hosts from the step's node count; flags override them. In a\n"
      "Kubernetes pod (KUBERNETES_SERVICE_HOST set) --key-file and --seeds (the headless Service) are\n"
      "enough: the name comes from SHOAL_POD_NAME, --host from SHOAL_NODE_NAME, the cluster id and job\n"
      "from SHOAL_JOB, --advertise from SHOAL_POD_IP (the downward API, as deploy/kubernetes/ sets\n"
      "them), --slots from NVIDIA_VISIBLE_DEVICES, --bind 0.0.0.0:7946; flags override them. Under\n"
      "systemd (Type=notify) it sends READY=1 once in a committed view, STATUS=, WATCHDOG=1 and\n"
      "STOPPING=1 (see packaging/shoal-agent.service).\n"
      "Exit status: 0 after a graceful stop, 1 on a runtime failure (port in use, control socket\n"
      "held by a live agent, join timeout), 2 on a usage error (a flag, the config file, the key file).");
  add_member_flags(*app, flags);
  add_health_flags(*app, flags);
  add_checkpoint_flags(*app, flags);
  add_worker_flags(*app, flags);
  add_drain_flags(*app, flags);
  add_operation_flags(*app, flags);
  return app;
}

void apply_slurm_defaults(AgentFlags& f, const ops::SlurmDefaults& slurm) {
  if (!slurm.under_slurm) return;
  if (!f.name && !slurm.name.empty()) f.name = slurm.name;
  if (!f.bind) f.bind = "0.0.0.0:" + std::to_string(ops::kSlurmPort);
  if (!f.cluster) f.cluster = slurm.cluster;
  if (!f.job) f.job = slurm.job;
  if (!f.slots && slurm.slots) f.slots = *slurm.slots;
  if (!f.min_hosts && slurm.min_hosts) f.min_hosts = *slurm.min_hosts;
}

void apply_kubernetes_defaults(AgentFlags& f, const ops::KubernetesDefaults& pod) {
  if (!pod.under_kubernetes) return;
  if (!f.name && !pod.name.empty()) f.name = pod.name;
  if (!f.bind) f.bind = "0.0.0.0:" + std::to_string(ops::kKubernetesPort);
  if (!f.advertise && !pod.advertise.empty()) f.advertise = pod.advertise;
  if (!f.cluster && !pod.job.empty()) f.cluster = pod.job;
  if (!f.job && !pod.job.empty()) f.job = pod.job;
  if (!f.host && !pod.host.empty()) f.host = pod.host;
  if (!f.slots && pod.slots) f.slots = *pod.slots;
}

bool apply_host_name_default(AgentFlags& f, const std::string& host_name) {
  if (f.name || host_name.empty()) return false;
  f.name = host_name;
  return true;
}

Result<daemon::AgentConfig> agent_config(const AgentFlags& f, const ops::SlurmDefaults& slurm) {
  if (!f.name) return fail("--name is required");
  if (!f.bind) return fail("--bind is required");
  daemon::AgentConfig cfg;
  // Checked again: under Slurm the name may come from SLURMD_NODENAME.
  if (auto ok = check_member_name(*f.name); !ok) {
    return fail("--name: " + ok.error().message + " ('" + *f.name + "'; give --name to choose another)");
  }
  cfg.name = *f.name;
  auto bind = net::parse_host_port(*f.bind, net::PortZero::allowed);
  if (!bind) return fail("--bind: " + bind.error().message);
  cfg.bind = *bind;
  if (f.seeds) {
    auto list = net::parse_host_port_list(*f.seeds);
    if (!list) return fail("--seeds: " + list.error().message);
    cfg.seeds = *list;
  } else if (slurm.under_slurm) {
    // Every other node of the step, at this agent's port: all agents of a step bind the same one.
    cfg.seeds = ops::slurm_seeds(slurm, cfg.name, cfg.bind.port);
    if (!cfg.seeds.empty() && cfg.bind.port == 0) {
      return fail("under Slurm the seeds are the other nodes at this agent's port: --bind needs a fixed port");
    }
  }
  cfg.gossip.cluster_id = f.cluster.value_or("default");
  if (f.join_timeout_s) cfg.join_timeout = milliseconds(*f.join_timeout_s);
  if (f.advertise) cfg.advertise_host = *f.advertise;
  cfg.meta.slots = static_cast<uint32_t>(f.slots.value_or(1));
  cfg.membership.min_hosts = static_cast<uint32_t>(f.min_hosts.value_or(1));
  cfg.membership.max_hosts = static_cast<uint32_t>(f.max_hosts.value_or(0));
  if (f.max_hosts && f.min_hosts && *f.max_hosts < *f.min_hosts) return fail("--max-hosts is below --min-hosts");
  if (f.wait_hosts_s) cfg.wait_hosts = milliseconds(*f.wait_hosts_s);
  if (f.want_hosts) {
    const int64_t min_hosts = f.min_hosts.value_or(1);
    if (*f.want_hosts < min_hosts) {
      return fail("--want-hosts " + std::to_string(*f.want_hosts) + " is below --min-hosts " +
                  std::to_string(min_hosts) + ": the first view never holds fewer than --min-hosts members");
    }
    if (f.max_hosts && *f.want_hosts > *f.max_hosts) {
      return fail("--want-hosts " + std::to_string(*f.want_hosts) + " is above --max-hosts " +
                  std::to_string(*f.max_hosts));
    }
    if (!f.wait_hosts_s) return fail("--want-hosts needs --wait-hosts T: how long to wait for them");
    cfg.want_hosts = static_cast<uint32_t>(*f.want_hosts);
  }
  if (f.hold_down_s) cfg.membership.hold_down = std::chrono::duration_cast<gossip::Time>(milliseconds(*f.hold_down_s));
  if (f.join_window_s) {
    cfg.membership.join_window = std::chrono::duration_cast<gossip::Time>(milliseconds(*f.join_window_s));
  }
  if (f.join_window_from) cfg.membership.join_window_from = *f.join_window_from;
  if (f.hold_down_max_s) {
    cfg.membership.hold_down_max = std::chrono::duration_cast<gossip::Time>(milliseconds(*f.hold_down_max_s));
  }
  if (!f.evict_stragglers && (f.evict_after_s || f.evict_window_s || f.evict_hold_down_s)) {
    return fail("--evict-after, --evict-window and --evict-hold-down need --evict-stragglers");
  }
  auto& ev = cfg.membership.eviction;
  ev.enabled = f.evict_stragglers;
  const auto micros = [](double s) { return gossip::Time(static_cast<int64_t>(s * 1e6)); };
  if (f.evict_after_s) ev.after = micros(*f.evict_after_s);
  if (f.evict_window_s) ev.window = micros(*f.evict_window_s);
  if (f.evict_hold_down_s) ev.hold_down = micros(*f.evict_hold_down_s);
  if (f.quorum_policy) {
    cfg.membership.policy =
        *f.quorum_policy == "any" ? membership::QuorumPolicy::any : membership::QuorumPolicy::majority;
  }
  cfg.ckpt.job = f.job.value_or(cfg.gossip.cluster_id);
  // Slurm's job id names this job alone; a default cluster id names every run of it.
  cfg.ckpt.job_named = f.job.has_value() || slurm.under_slurm;
  if (auto ok = ckpt::check_job_name(cfg.ckpt.job); !ok) {
    return fail(std::string(f.job ? "--job: " : "the cluster id is no job name; set --job: ") + ok.error().message);
  }
  if (f.host) cfg.meta.host = *f.host;
  cfg.ckpt.store = f.ckpt_store ? *f.ckpt_store : f.host ? ckpt::store_for_host(cfg.ckpt.job, *f.host) : cfg.ckpt.job;
  if (auto ok = ckpt::check_job_name(cfg.ckpt.store); !ok) return fail("--ckpt-store: " + ok.error().message);
  // A job nobody named: its segments carry the cluster's lineage as well (decided at the first view).
  cfg.ckpt.store_by_lineage = !cfg.ckpt.job_named && !f.ckpt_store;
  cfg.ckpt.replicas = static_cast<uint32_t>(f.ckpt_replicas.value_or(1));
  cfg.ckpt.replicate_duty_percent = static_cast<uint32_t>(f.ckpt_replicate_duty.value_or(20));
  // Unbounded by default, replicas kept for peers could fill /dev/shm and starve the trainers here.
  cfg.ckpt.budget_bytes = f.ckpt_budget_bytes ? *f.ckpt_budget_bytes : ckpt::default_budget_bytes();
  if (f.ckpt_dir) {
    cfg.ckpt.persist_dir = *f.ckpt_dir;
  } else if (f.ckpt_dir_keep || f.ckpt_exit_wait_s) {
    return fail("--ckpt-dir-keep and --ckpt-exit-wait need --ckpt-dir");
  }
  cfg.ckpt.persist_keep = static_cast<uint32_t>(f.ckpt_dir_keep.value_or(2));
  cfg.ckpt.keep_on_exit = f.ckpt_keep_on_exit;
  cfg.persist_exit_wait = std::chrono::seconds(f.ckpt_exit_wait_s.value_or(60));
  if (f.key_file) {
    cfg.key_file = *f.key_file;
  } else if (!f.insecure) {
    return fail("no cluster key: give --key-file PATH (`shoal keygen --output PATH`, the same file on every host; "
                "or SHOAL_KEY_FILE, a systemd credential cluster.key, or under Slurm ~/.shoal/job-$SLURM_JOB_ID.key), "
                "or --insecure to run a cluster that any host reaching " + *f.bind + " can join");
  }
  if (f.key_file && f.insecure) return fail("--insecure and a cluster key exclude each other");
  if (f.evict_stragglers && f.insecure) {
    return fail("--evict-stragglers needs a cluster key: eviction acts only on timing figures sealed with it, and "
                "with --insecure anyone who reaches the trainers' connections could evict a healthy host");
  }
  if (f.metrics) {
    auto metrics = net::parse_host_port(*f.metrics, net::PortZero::allowed);
    if (!metrics) return fail("--metrics: " + metrics.error().message);
    cfg.metrics = *metrics;
  }
  if ((f.precheck_factor || f.precheck_wait_s) && !f.precheck && !f.precheck_exclude) {
    return fail("--precheck-factor and --precheck-wait need --precheck (or --precheck-exclude)");
  }
  cfg.precheck = f.precheck || f.precheck_exclude;
  cfg.precheck_exclude = f.precheck_exclude;
  cfg.precheck_options.factor = f.precheck_factor.value_or(cfg.precheck_options.factor);
  if (f.precheck_wait_s) cfg.precheck_wait = milliseconds(*f.precheck_wait_s);
  cfg.control_path = f.control ? *f.control : control::default_control_path(cfg.name, control::probe_control_dirs());
  if (f.control_group) {
    auto gid = control::group_id(*f.control_group);
    if (!gid) return fail("--control-group: " + gid.error().message);
    cfg.control_group = *gid;
  }
  return cfg;
}

Result<DrainFlags> drain_flags(const AgentFlags& f) {
  DrainFlags d;
  d.on_sigterm = f.drain_on_sigterm;
  if (f.drain_within_s) d.within = milliseconds(*f.drain_within_s);
  if (f.drain_notice_url && !f.drain_on) return fail("--drain-notice-url needs --drain-on aws|gcp|azure");
  if (!f.drain_on) return d;
  ops::NoticeWatcherConfig w;
  w.cloud = ops::cloud_named(*f.drain_on).value_or(ops::Cloud::aws);  // the flag's check admits the three only
  w.endpoint = ops::default_notice_endpoint(w.cloud);
  if (f.drain_notice_url) {
    auto endpoint = ops::parse_notice_url(*f.drain_notice_url);
    if (!endpoint) return fail("--drain-notice-url: " + endpoint.error().message);
    w.endpoint = *endpoint;
  }
  d.notices = w;
  return d;
}

Result<std::optional<launcher::LaunchConfig>> launch_config(const AgentFlags& f,
                                                            const std::vector<std::string>& command,
                                                            const std::string& job,
                                                            const std::optional<std::string>& visible_devices) {
  if (command.empty()) {
    if (f.workers || f.max_restarts || f.master_port || f.run_id || f.role || f.devices || f.local_rank_arg ||
        f.worker_stop_timeout_s || f.failure_grace_s) {
      return fail("the worker flags (--workers, --max-restarts, --master-port, ...) need a command after `--`");
    }
    return std::optional<launcher::LaunchConfig>();
  }
  // A typo in the command is one clear error now, not a crash loop of workers later.
  if (auto program = launcher::resolve_program(command.front(), launcher::current_environment()); !program) {
    return fail(program.error().message);
  }
  launcher::LaunchConfig cfg;
  cfg.command = command;
  cfg.limits.mode = f.workers == "connect" ? launcher::WorkerMode::connect : launcher::WorkerMode::restart;
  cfg.limits.max_restarts = static_cast<uint32_t>(f.max_restarts.value_or(3));
  if (f.failure_grace_s) cfg.limits.failure_grace = gossip::Time(static_cast<int64_t>(*f.failure_grace_s * 1e6));
  if (f.worker_stop_timeout_s) {
    cfg.stop_timeout = std::chrono::milliseconds(static_cast<int64_t>(*f.worker_stop_timeout_s * 1e3));
  }
  cfg.torchrun.master_port = static_cast<uint16_t>(f.master_port.value_or(29500));
  cfg.torchrun.run_id = f.run_id.value_or(job);
  cfg.torchrun.role_name = f.role.value_or("default");
  const std::string devices = f.devices.value_or("all");
  cfg.torchrun.devices = devices == "slot"      ? ranks::DeviceVisibility::one_per_slot
                         : devices == "inherit" ? ranks::DeviceVisibility::inherit
                                                : ranks::DeviceVisibility::all_of_member;
  if (visible_devices && *visible_devices != "NoDevFiles") cfg.torchrun.device_ids = split_commas(*visible_devices);
  cfg.local_rank_arg = f.local_rank_arg;
  return std::optional<launcher::LaunchConfig>(std::move(cfg));
}

}  // namespace shoal::cli

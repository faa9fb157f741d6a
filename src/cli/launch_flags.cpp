// LaunchFlags: help texts, defaults and checks of the worker flags.
#include "cli/launch_flags.hpp"

#include <cstdlib>

#include "cli/seconds_text.hpp"
#include "launcher/worker_process.hpp"

namespace shoal::cli {
namespace {

Result<gossip::Time> parse_duration(const std::string& text) {
  auto s = parse_seconds(text, ZeroSeconds::allowed, 86400.0);
  if (!s) return fail(s.error().message);
  return gossip::Time(static_cast<int64_t>(*s * 1e6));
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

}  // namespace

void LaunchFlags::add_to(FlagSet& flags) {
  flags.add_string("workers", "restart|connect",
                   "with `-- COMMAND`: restart (default) stops and starts the workers at every committed view "
                   "change with the new ranks, as torchrun does, for scripts that cannot rebuild in place; "
                   "connect starts them once and lets them follow views themselves (they link libshoal and call "
                   "Session::connect, which finds this agent through SHOAL_CONTROL and SHOAL_SLOT)",
                   &workers_);
  flags.add_int("max-restarts", "N",
                "restarts after the workers' own failures (not ones a view change explains) before this host "
                "leaves the cluster and exits 1 (default: 3); passed on as TORCHELASTIC_MAX_RESTARTS",
                &max_restarts_, 0, 1000000);
  flags.add_int("master-port", "PORT",
                "MASTER_PORT of the workers: the same on every host, so whichever host holds rank 0 after a view "
                "change, the workers find its store there (default: 29500)",
                &master_port_, 1, 65535);
  flags.add_string("run-id", "ID", "TORCHELASTIC_RUN_ID of the workers (default: the job name)", &run_id_);
  flags.add_string("role", "NAME", "ROLE_NAME of the workers (default: default)", &role_);
  flags.add_string("devices", "all|slot|inherit",
                   "CUDA_VISIBLE_DEVICES of the workers: all (default) lists this host's devices and each worker "
                   "picks its own with LOCAL_RANK, as torchrun scripts do; slot shows each worker only its slot's "
                   "device (as cuda:0); inherit leaves the variable as the agent has it. The device ids are this "
                   "agent's CUDA_VISIBLE_DEVICES when set (Slurm's allocation), else 0..slots-1",
                   &devices_);
  flags.add_bool("local-rank-arg", "also pass --local-rank=N to each worker (torch.distributed.launch's convention)",
                 &local_rank_arg_);
  flags.add_string("worker-stop-timeout", "SECONDS",
                   "how long a worker may take to exit after SIGTERM before SIGKILL (default: 15)", &stop_timeout_);
  flags.add_string("failure-grace", "SECONDS",
                   "after a worker fails, how long to wait for a view change that explains it (a lost peer) "
                   "before counting it as the workers' own failure (default: 5)",
                   &failure_grace_);
}

Result<std::optional<launcher::LaunchConfig>> LaunchFlags::config(
    const std::vector<std::string>& command, const std::string& job,
    const std::optional<std::string>& visible_devices) const {
  if (command.empty()) {
    if (workers_ || max_restarts_ || master_port_ || run_id_ || role_ || devices_ || local_rank_arg_ || stop_timeout_ ||
        failure_grace_) {
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
  if (workers_ && *workers_ != "restart" && *workers_ != "connect") {
    return fail("--workers must be restart or connect, not '" + *workers_ + "'");
  }
  cfg.limits.mode = workers_ && *workers_ == "connect" ? launcher::WorkerMode::connect : launcher::WorkerMode::restart;
  cfg.limits.max_restarts = static_cast<uint32_t>(max_restarts_.value_or(3));
  if (failure_grace_) {
    auto t = parse_duration(*failure_grace_);
    if (!t) return fail("--failure-grace: " + t.error().message);
    cfg.limits.failure_grace = *t;
  }
  if (stop_timeout_) {
    auto t = parse_duration(*stop_timeout_);
    if (!t) return fail("--worker-stop-timeout: " + t.error().message);
    cfg.stop_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(*t);
  }
  cfg.torchrun.master_port = static_cast<uint16_t>(master_port_.value_or(29500));
  cfg.torchrun.run_id = run_id_.value_or(job);
  if (cfg.torchrun.run_id.empty()) return fail("--run-id must not be empty");
  cfg.torchrun.role_name = role_.value_or("default");
  if (cfg.torchrun.role_name.empty()) return fail("--role must not be empty");
  const std::string devices = devices_.value_or("all");
  if (devices == "all") {
    cfg.torchrun.devices = ranks::DeviceVisibility::all_of_member;
  } else if (devices == "slot") {
    cfg.torchrun.devices = ranks::DeviceVisibility::one_per_slot;
  } else if (devices == "inherit") {
    cfg.torchrun.devices = ranks::DeviceVisibility::inherit;
  } else {
    return fail("--devices must be all, slot or inherit, not '" + devices + "'");
  }
  if (visible_devices && *visible_devices != "NoDevFiles") cfg.torchrun.device_ids = split_commas(*visible_devices);
  cfg.local_rank_arg = local_rank_arg_;
  return std::optional<launcher::LaunchConfig>(std::move(cfg));
}

}  // namespace shoal::cli

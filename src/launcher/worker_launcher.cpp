// WorkerLauncher: the shell around LaunchPolicy (processes, pipes, signals, timers).
#include "launcher/worker_launcher.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <set>

#include "base/log.hpp"
#include "daemon/agent.hpp"
#include "launcher/worker_output.hpp"
#include "launcher/worker_process.hpp"
#include "membership/view.hpp"

namespace shoal::launcher {
namespace {

auto& logger() { return log::get(log::Component::agent); }

}  // namespace

WorkerLauncher::WorkerLauncher(daemon::Agent& agent, LaunchConfig cfg, std::function<void(int)> leave)
    : agent_(agent),
      cfg_(std::move(cfg)),
      leave_(std::move(leave)),
      policy_(cfg_.limits),
      origin_(std::chrono::steady_clock::now()) {}

WorkerLauncher::~WorkerLauncher() {
  // The agent is exiting: no worker outlives it (PR_SET_PDEATHSIG covers a crash; this covers a return).
  for (const auto& [slot, w] : workers_) signal_worker(w.pid, SIGKILL);
}

gossip::Time WorkerLauncher::now() const {
  return std::chrono::duration_cast<gossip::Time>(std::chrono::steady_clock::now() - origin_);
}

void WorkerLauncher::attach() {
  auto& io = agent_.io();
  children_ = std::make_unique<boost::asio::signal_set>(io, SIGCHLD);
  wake_ = std::make_unique<boost::asio::steady_timer>(io);
  kill_ = std::make_unique<boost::asio::steady_timer>(io);
  wait_children();
  agent_.add_view_observer([this](const membership::View& v) { on_view(v); });
  agent_.add_drain_observer([this](std::chrono::steady_clock::time_point deadline) {
    apply(policy_.on_drain(std::chrono::duration_cast<gossip::Time>(deadline - origin_), now()));
  });
  agent_.hold_exit_while([this] { return !workers_.empty(); });
}

void WorkerLauncher::shutdown() { apply(policy_.on_shutdown()); }

void WorkerLauncher::on_view(const membership::View& view) {
  table_.emplace(view);
  const auto slots = static_cast<uint32_t>(table_->ranks_of(agent_.swim().self().name).size());
  apply(policy_.on_view(view.epoch(), slots, now()));
}

void WorkerLauncher::apply(LaunchStep step) {
  if (!step.why.empty()) logger().info("workers: {}", step.why);
  if (step.stop_all) stop_workers();
  for (uint32_t slot : step.start_slots) start_worker(slot, step.start_epoch);
  if (step.wake_at) {
    wake_->expires_at(origin_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(*step.wake_at));
    wake_->async_wait([this](boost::system::error_code ec) {
      if (!ec) apply(policy_.on_tick(now()));
    });
  }
  if (step.leave_with && !left_) {
    left_ = true;
    wake_->cancel();
    leave_(*step.leave_with);
  }
}

void WorkerLauncher::start_worker(uint32_t slot, uint64_t epoch) {
  const std::string& self = agent_.swim().self().name;
  ranks::TorchrunSettings settings = cfg_.torchrun;
  settings.restart_count = policy_.restart_count(epoch);
  settings.max_restarts = cfg_.limits.max_restarts;
  auto vars = table_ ? ranks::torchrun_env(*table_, self, slot, settings)
                     : Result<std::vector<ranks::EnvVar>>(fail(std::string("no committed view")));
  WorkerSpec spec;
  if (vars) {
    std::set<std::string> ours;
    for (const auto& [k, v] : *vars) ours.insert(k);
    ours.insert({"SHOAL_CONTROL", "SHOAL_SLOT", "SHOAL_VIEW_EPOCH", "SHOAL_WORKER_ROUND"});
    for (auto& kv : current_environment()) {
      if (!ours.contains(kv.first)) spec.env.push_back(std::move(kv));
    }
    spec.env.insert(spec.env.end(), vars->begin(), vars->end());
    spec.env.emplace_back("SHOAL_VIEW_EPOCH", std::to_string(epoch));
    // Session::connect() with no control path reads these two: in connect mode the worker follows the
    // agent; in restart mode it may still connect, for checkpoints (shoal.torch.Checkpointer).
    if (!agent_.control_path().empty()) {
      spec.env.emplace_back("SHOAL_CONTROL", agent_.control_path());
      spec.env.emplace_back("SHOAL_SLOT", std::to_string(slot));
      if (cfg_.limits.mode == WorkerMode::restart) {
        spec.env.emplace_back("SHOAL_WORKER_ROUND", std::to_string(policy_.round()));
      }
    }
    spec.argv = cfg_.command;
  }
  const ranks::RankEntry* entry = table_ ? table_->find(self, slot) : nullptr;
  const uint32_t rank = entry != nullptr ? entry->global_rank : slot;
  if (vars && cfg_.local_rank_arg)
    spec.argv.push_back("--local-rank=" + std::to_string(entry ? entry->local_rank : slot));

  auto spawned = vars ? spawn_worker(spec) : Result<SpawnedWorker>(fail(vars.error().message));
  if (!spawned) {
    logger().error("workers: cannot start the worker of slot {}: {}", slot, spawned.error().message);
    // Counted like a worker that failed at once; posted, so the policy sees it after this step.
    boost::asio::post(agent_.io(), [this, slot] { apply(policy_.on_exit(slot, false, now())); });
    return;
  }
  workers_[slot] = Worker{spawned->pid, rank, epoch, std::chrono::steady_clock::now()};
  logger().info("workers: started rank {} (slot {}, pid {}) for view {}", rank, slot, spawned->pid, epoch);
  const std::string prefix = "[rank " + std::to_string(rank) + "] ";
  for (auto [fd, out] : {std::pair{spawned->stdout_fd, STDOUT_FILENO}, std::pair{spawned->stderr_fd, STDERR_FILENO}}) {
    auto output = std::make_shared<WorkerOutput>(agent_.io(), fd, out, prefix);
    outputs_.push_back(output);
    output->start(
        [this, raw = output.get()] { std::erase_if(outputs_, [raw](const auto& o) { return o.get() == raw; }); });
  }
}

void WorkerLauncher::stop_workers() {
  for (const auto& [slot, w] : workers_) signal_worker(w.pid, SIGTERM);
  kill_->expires_after(cfg_.stop_timeout);
  kill_->async_wait([this](boost::system::error_code ec) {
    if (ec) return;
    for (const auto& [slot, w] : workers_) {
      logger().warn("workers: rank {} (pid {}) ignored SIGTERM for {} s: SIGKILL", w.rank, w.pid,
                    std::chrono::duration_cast<std::chrono::seconds>(cfg_.stop_timeout).count());
      signal_worker(w.pid, SIGKILL);
    }
  });
}

void WorkerLauncher::wait_children() {
  children_->async_wait([this](boost::system::error_code ec, int) {
    if (ec) return;
    reap();
    wait_children();
  });
}

void WorkerLauncher::reap() {
  std::vector<std::pair<uint32_t, int>> ended;
  for (const auto& [slot, w] : workers_) {
    int status = 0;
    if (::waitpid(w.pid, &status, WNOHANG) == w.pid) ended.emplace_back(slot, status);
  }
  for (const auto& [slot, status] : ended) {
    const Worker w = workers_.at(slot);
    workers_.erase(slot);
    const auto ran =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - w.started);
    const bool success = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    logger().info("workers: rank {} (pid {}, view {}) {} after {:.1f} s", w.rank, w.pid, w.epoch,
                  describe_wait_status(status), static_cast<double>(ran.count()) / 1000.0);
    if (workers_.empty()) kill_->cancel();
    apply(policy_.on_exit(slot, success, now()));
  }
}

}  // namespace shoal::launcher

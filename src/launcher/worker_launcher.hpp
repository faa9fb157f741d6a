// WorkerLauncher: `shoal agent -- COMMAND ARGS...`. Runs one worker per GPU slot of this host with
// torchrun's environment for the committed view, and carries out LaunchPolicy's decisions on the
// agent's loop: spawn, SIGTERM then SIGKILL, reap, prefix output, leave.
#pragma once

#include <sys/types.h>

#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launcher/launch_policy.hpp"
#include "ranks/rank_table.hpp"
#include "ranks/torchrun_env.hpp"

namespace shoal::membership {
class View;
}
namespace shoal::daemon {
class Agent;
}

namespace shoal::launcher {

class WorkerOutput;

struct LaunchConfig {
  std::vector<std::string> command;  // COMMAND ARGS...
  LaunchLimits limits;
  // MASTER_PORT, run id, role, CUDA_VISIBLE_DEVICES; the restart counts are filled in per start.
  ranks::TorchrunSettings torchrun;
  bool local_rank_arg = false;                     // also pass --local-rank=N (torch.distributed.launch's convention)
  std::chrono::milliseconds stop_timeout{15'000};  // SIGTERM, then SIGKILL after this long
};

class WorkerLauncher {
 public:
  // `leave(status)` is called once, when the host should leave the cluster and exit with `status`.
  WorkerLauncher(daemon::Agent& agent, LaunchConfig cfg, std::function<void(int)> leave);
  ~WorkerLauncher();
  WorkerLauncher(const WorkerLauncher&) = delete;
  WorkerLauncher& operator=(const WorkerLauncher&) = delete;

  // Before agent.start(): follows committed views and reaps workers.
  void attach();
  // SIGTERM/SIGINT to the agent: stops the workers, then calls leave(0).
  void shutdown();

 private:
  struct Worker {
    pid_t pid = -1;
    uint32_t rank = 0;
    uint64_t epoch = 0;
    std::chrono::steady_clock::time_point started;
  };

  gossip::Time now() const;
  void on_view(const membership::View& view);
  void apply(LaunchStep step);
  void start_worker(uint32_t slot, uint64_t epoch);
  void stop_workers();
  void wait_children();
  void reap();

  daemon::Agent& agent_;
  LaunchConfig cfg_;
  std::function<void(int)> leave_;
  LaunchPolicy policy_;
  std::chrono::steady_clock::time_point origin_;
  std::optional<ranks::RankTable> table_;
  std::map<uint32_t, Worker> workers_;  // by slot: the live ones
  std::vector<std::shared_ptr<WorkerOutput>> outputs_;
  std::unique_ptr<boost::asio::signal_set> children_;
  std::unique_ptr<boost::asio::steady_timer> wake_;
  std::unique_ptr<boost::asio::steady_timer> kill_;
  bool left_ = false;
};

}  // namespace shoal::launcher

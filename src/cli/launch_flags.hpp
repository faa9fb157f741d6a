// The flags of `shoal agent ... -- COMMAND ARGS...` that shape the workers (--workers, --max-restarts,
// --master-port, ...), and the LaunchConfig they make.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "cli/flags.hpp"
#include "launcher/worker_launcher.hpp"

namespace shoal::cli {

class LaunchFlags {
 public:
  void add_to(FlagSet& flags);
  // nullopt without a command (then no launcher flag may be given). `job` is the default run id;
  // `visible_devices` is the agent's CUDA_VISIBLE_DEVICES, if any (the physical ids of its slots).
  Result<std::optional<launcher::LaunchConfig>> config(const std::vector<std::string>& command, const std::string& job,
                                                       const std::optional<std::string>& visible_devices) const;

 private:
  std::optional<std::string> workers_, run_id_, role_, devices_, stop_timeout_, failure_grace_;
  std::optional<int64_t> max_restarts_, master_port_;
  bool local_rank_arg_ = false;
};

}  // namespace shoal::cli

// HealthBoard: what this agent knows of node health: the latest straggler verdict and figures that its
// local trainer's session reported (the same on every rank of the view, measured on the job's own steps),
// when it came, and how often the verdict changed. Logs one line per change of the straggler list. Lives
// on the agent's loop; `shoal health`, `shoal status` and the metrics read it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "shoal/health.hpp"

namespace shoal::daemon {

class HealthBoard {
 public:
  using Clock = std::chrono::steady_clock;

  // A report from the local session.
  void update(JobHealth health, Clock::time_point now);

  const std::optional<JobHealth>& latest() const { return latest_; }
  // Seconds since the latest report; nullopt before the first.
  std::optional<double> age_s(Clock::time_point now) const;
  uint64_t changes() const { return changes_; }
  uint64_t reports() const { return reports_; }

 private:
  std::optional<JobHealth> latest_;
  Clock::time_point received_{};
  uint64_t changes_ = 0;
  uint64_t reports_ = 0;
};

// The line a change of the straggler list is logged with: who is named now (with each one's compute
// against the median of the others), or that nobody is any more.
std::string describe_change(const std::vector<std::string>& before, const JobHealth& now);

}  // namespace shoal::daemon

// TrainerBoard: what the local trainers last said their runs lost (`trainer-stats`, health/trainer_stats.hpp),
// one report per local rank, each replaced by the next, with when it came. Bounded by the ranks the agent
// admits (below its slots and health::kMaxTrainerRanks). Lives on the agent's loop; `shoal status` and the
// metrics read it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>

#include "health/trainer_stats.hpp"

namespace shoal::daemon {

class TrainerBoard {
 public:
  using Clock = std::chrono::steady_clock;

  struct Entry {
    health::TrainerStats stats;
    Clock::time_point received{};
    uint64_t reports = 0;  // from this local rank since the agent started
  };

  void update(uint32_t slot, health::TrainerStats stats, Clock::time_point now);
  // By local rank.
  const std::map<uint32_t, Entry>& ranks() const { return ranks_; }
  uint64_t reports() const { return reports_; }

 private:
  std::map<uint32_t, Entry> ranks_;
  uint64_t reports_ = 0;
};

}  // namespace shoal::daemon

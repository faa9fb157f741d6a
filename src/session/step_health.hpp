// StepHealth: the elastic loop's node-health duty. Around each step it reads a monotonic clock and the
// communicator's time inside collectives (comm::TimedCommunicator), so a step splits into compute (outside
// collectives) and wait (inside them). Every `exchange_every` steps the ranks allgather their figures in
// fixed-size records (a few dozen bytes each) on the job's own communicator, so every rank holds the same
// figures and the straggler judge (health/straggler_judge.hpp) reaches the same verdict everywhere. Nothing
// of it rides on gossip. A new communicator starts the figures afresh on every rank alike. Each record is
// sealed with a key derived from the cluster key (health/record_seal.hpp), because the communicator's
// connections are not: a record that does not verify is dropped and counted, never judged.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/warn_limiter.hpp"
#include "health/record_seal.hpp"
#include "health/step_record.hpp"
#include "health/straggler_judge.hpp"
#include "shoal/communicator.hpp"
#include "shoal/health.hpp"

namespace shoal::session {

class StepHealth {
 public:
  // Throws shoal::Error when `rule` is unusable (health::check_rule says why).
  explicit StepHealth(const StragglerOptions& rule);

  bool enabled() const { return rule_.exchange_every > 0; }

  // A new communicator (attempt `attempt` of `epoch`) whose rank r runs on host rank_hosts[r]: every figure
  // and verdict is forgotten. `keys`: the cluster's key ring, which seals and checks the records; nullptr
  // in an open cluster (records unsealed, the verdict not authenticated).
  void restart(std::vector<std::string> rank_hosts, uint64_t epoch, uint32_t attempt = 0,
               std::shared_ptr<const wire::KeyRing> keys = nullptr);
  // Around one step on `comm`, the communicator of the latest restart().
  void step_began(Communicator& comm);
  void step_ended(Communicator& comm);
  // After step `step` completed: when an exchange is due, allgathers every rank's figures and evaluates.
  // Collective (every rank calls it after the same steps); throws what the communicator throws. True when
  // it exchanged.
  bool exchange_if_due(Communicator& comm, uint64_t step);

  const JobHealth& health() const { return judge_.health(); }

 private:
  using Clock = std::chrono::steady_clock;

  StragglerOptions rule_;
  health::StragglerJudge judge_;
  std::vector<std::string> rank_hosts_;
  uint64_t epoch_ = 0;
  uint32_t attempt_ = 0;
  std::shared_ptr<const wire::KeyRing> keys_;
  std::vector<std::string> hosts_;           // distinct, in rank order
  std::vector<health::StepFigure> pending_;  // this rank's figures since the last exchange
  std::optional<Clock::time_point> began_;
  uint64_t waited_at_begin_ns_ = 0;
  log::WarnLimiter warn_limiter_{std::chrono::seconds(60)};
};

}  // namespace shoal::session

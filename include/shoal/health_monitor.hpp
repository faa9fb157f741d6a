// HealthMonitor: node health (shoal/health.hpp) for a trainer that runs its own loop instead of
// ElasticLoop (the Python package's shoal.torch.Elastic, a hand-written C++ loop). The same measurement,
// exchange and verdict as ElasticLoop's: around each step it times compute (outside collectives) and wait
// (inside them) on a monotonic clock; every StragglerOptions::exchange_every steps the ranks allgather their
// figures on the step's communicator and evaluate the straggler rule identically, and the session's agent is
// told the verdict (`shoal health`, eviction with --evict-stragglers), embedded or connected alike.
//
//   shoal::HealthMonitor health(*session, {});
//   for (uint64_t step = 0;; ++step) {
//     health.step_began(*comm);
//     compute(); comm->allreduce(...);
//     health.step_ended(*comm);
//     health.completed(*comm, step);   // collective every exchange_every steps: every rank calls it
//   }
//
// A communicator other than the previous step's (a new view, a rebuild) starts the figures afresh on every
// rank alike. Every rank of a job must pass the same StragglerOptions. Not thread-safe: one loop's thread.
#pragma once

#include <cstdint>
#include <memory>

#include "shoal/api.hpp"
#include "shoal/communicator.hpp"
#include "shoal/health.hpp"
#include "shoal/session.hpp"

namespace shoal {
namespace session {
class StepHealth;
}

class SHOAL_API HealthMonitor {
 public:
  // Throws shoal::Error when `rule` is out of range (exchange_every 0: it measures nothing).
  HealthMonitor(Session& session, const StragglerOptions& rule);
  ~HealthMonitor();
  HealthMonitor(const HealthMonitor&) = delete;
  HealthMonitor& operator=(const HealthMonitor&) = delete;

  // Around one step on `comm` (the session's current communicator).
  void step_began(Communicator& comm);
  void step_ended(Communicator& comm);
  // After step `step` completed on `comm`: when an exchange is due, allgathers every rank's figures, judges,
  // and tells the session's agent. Collective then; throws what the communicator throws. True when it
  // exchanged.
  bool completed(Communicator& comm, uint64_t step);

  // The latest verdict (empty hosts before the first exchange of the current communicator).
  JobHealth health() const;

 private:
  // A new communicator: the figures start afresh.
  void follow(Communicator& comm);

  Session& session_;
  std::unique_ptr<session::StepHealth> health_;
  const Communicator* comm_ = nullptr;  // identity only, never dereferenced
  uint64_t epoch_ = 0;
  uint32_t attempt_ = 0;
};

}  // namespace shoal

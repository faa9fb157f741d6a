// HealthMonitor: StepHealth for loops other than ElasticLoop, restarted on each new communicator.
#include "shoal/health_monitor.hpp"

#include "session/session_core.hpp"
#include "session/step_health.hpp"

namespace shoal {

HealthMonitor::HealthMonitor(Session& session, const StragglerOptions& rule)
    : session_(session), health_(std::make_unique<session::StepHealth>(rule)) {}

HealthMonitor::~HealthMonitor() = default;

JobHealth HealthMonitor::health() const { return health_->health(); }

void HealthMonitor::follow(Communicator& comm) {
  const RankInfo ranks = session_.ranks();
  if (&comm == comm_ && comm.epoch() == epoch_ && ranks.attempt == attempt_) return;
  comm_ = &comm;
  epoch_ = comm.epoch();
  attempt_ = ranks.attempt;
  auto* core = dynamic_cast<session::SessionCore*>(&session_);
  std::vector<std::string> rank_hosts;
  if (core) rank_hosts = core->rank_hosts(comm);
  if (rank_hosts.size() != static_cast<size_t>(comm.world_size())) {
    // As ElasticLoop: one rank per member when the counts say so, else ranks as hosts.
    rank_hosts = ranks.members;
    if (rank_hosts.size() != static_cast<size_t>(comm.world_size())) {
      rank_hosts.clear();
      for (int r = 0; r < comm.world_size(); ++r) rank_hosts.push_back("rank-" + std::to_string(r));
    }
  }
  health_->restart(std::move(rank_hosts), comm.epoch(), ranks.attempt, core ? core->health_keys() : nullptr);
}

void HealthMonitor::step_began(Communicator& comm) {
  follow(comm);
  health_->step_began(comm);
}

void HealthMonitor::step_ended(Communicator& comm) {
  follow(comm);
  health_->step_ended(comm);
}

bool HealthMonitor::completed(Communicator& comm, uint64_t step) {
  follow(comm);
  if (!health_->exchange_if_due(comm, step)) return false;
  if (auto* core = dynamic_cast<session::SessionCore*>(&session_)) core->report_health(health_->health());
  return true;
}

}  // namespace shoal

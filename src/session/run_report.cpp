// RunReport: a trainer's run figures checked against the agent's table (health/trainer_stats.hpp) and handed to
// its session (see include/shoal/run_report.hpp).
#include "shoal/run_report.hpp"

#include "health/trainer_stats.hpp"
#include "session/session_core.hpp"
#include "shoal/errors.hpp"

namespace shoal {

std::vector<std::string> RunReport::keys() { return health::trainer_stats_keys(); }

void RunReport::send(Session& session, const std::vector<std::pair<std::string, double>>& figures) {
  auto stats = health::make_trainer_stats(figures);
  if (!stats) throw Error(stats.error().message);
  if (auto* core = dynamic_cast<session::SessionCore*>(&session)) core->report_trainer_stats(*stats);
}

}  // namespace shoal

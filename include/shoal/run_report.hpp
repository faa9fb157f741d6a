// RunReport: what a trainer's run lost so far (steps discarded, redone and rolled back, rebuilds, samples
// trained; seconds of startup, rebuilds, stalls, saves and lost steps; wall and productive seconds; ETTR), told
// to the session's agent: `shoal status` shows each local rank's latest report, the agent's /metrics exports it
// (shoal_trainer_*, by rank). Python's shoal.torch.Elastic and ElasticFSDP send their job.stats() every few
// seconds and when batches() ends; a loop of one's own may send its own figures.
//
//   shoal::RunReport::send(*session, {{"steps_completed", 120}, {"wall_s", 61.5}, {"ettr", 0.97}});
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "shoal/api.hpp"
#include "shoal/session.hpp"

namespace shoal {

class SHOAL_API RunReport {
 public:
  // The figures an agent takes, in its order (the names of shoal.torch.ElasticStats' fields): counts are
  // whole numbers up to 2^53, seconds at most 1e9, ettr in [0, 1].
  static std::vector<std::string> keys();
  // Checks `figures` (each a key of keys(), at most once, its value in range, at least one) and hands them to
  // the session's agent, which keeps the latest report of each local rank. Never blocks for long: an embedded
  // agent is handed it, a connected session's reporter thread sends it (a newer report replaces one not sent
  // yet; one that cannot be sent is logged and dropped). Throws shoal::Error naming the figure that is wrong.
  static void send(Session& session, const std::vector<std::pair<std::string, double>>& figures);
};

}  // namespace shoal

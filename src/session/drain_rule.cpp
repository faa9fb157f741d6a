// DrainRule: the count of draining ranks, summed over the communicator, and the decision it gives (see
// include/shoal/drain_rule.hpp).
#include "shoal/drain_rule.hpp"

#include <span>

#include "shoal/errors.hpp"

namespace shoal {
namespace {

DrainDecision decide_from(uint64_t draining, uint64_t world) {
  DrainDecision d;
  d.draining_ranks = static_cast<uint32_t>(draining);
  d.drain = draining > 0;
  d.everyone = draining > 0 && draining >= world;
  return d;
}

}  // namespace

DrainDecision DrainRule::decide(const std::vector<bool>& draining) {
  if (draining.empty()) throw Error("DrainRule: no rank's word");
  uint64_t n = 0;
  for (const bool d : draining) n += d ? 1 : 0;
  return decide_from(n, draining.size());
}

DrainDecision DrainRule::agree(Communicator& comm, bool mine) {
  int64_t n = mine ? 1 : 0;
  comm.allreduce(std::span<int64_t>(&n, 1), ReduceOp::sum);
  return decide_from(n < 0 ? 0 : static_cast<uint64_t>(n), static_cast<uint64_t>(comm.world_size()));
}

}  // namespace shoal

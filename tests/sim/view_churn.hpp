// One seeded property run of committed views under churn: a small cluster with view keepers, a random
// schedule of faults (crashes, restarts with a new generation, joins, graceful leaves, datagram loss,
// symmetric and one-way partitions, partitions that give two members the belief that each is the
// smallest, the proposer crashing in the middle of its accept phase), then the faults stop and the run
// waits for convergence. A ViewSafetyChecker counts divergences, minority commits and non-convergence.
// Shared by the view-safety scenario and tests/sim/sim_views_test.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "event_queue.hpp"
#include "membership/config.hpp"

namespace shoal::sim {

struct ViewChurnParams {
  size_t min_members = 3;  // the starting size is drawn from [min_members, max_members]
  size_t max_members = 9;
  size_t max_joins = 3;                  // members added during the run
  Time churn{12'000'000};                // how long faults are injected
  Time settle_limit{60'000'000};         // how long the run may take to converge once faults stop
  double max_loss = 0.1;                 // datagram loss during the faults: uniform in [0, max_loss]
  membership::QuorumPolicy policy = membership::QuorumPolicy::majority;
  // Let --min-hosts or more members that know no view yet (restarted or joined) be up at once during the
  // faults: a partition that isolates them lets them bootstrap a second epoch 1 (a known hazard, off by
  // default; see tests/sim/README.md).
  bool allow_fresh_quorum = false;
  // When set, told every fault and every commit as it happens (for replaying one seed).
  std::function<void(const std::string&)> trace;
};

struct ViewChurnResult {
  uint64_t divergences = 0;
  uint64_t minority_commits = 0;
  uint64_t unconverged = 0;
  uint64_t majority_lost_stalls = 0;     // ended stalled as the rule demands, then forced (see run_view_churn)
  uint64_t commits = 0;
  uint64_t faults = 0;                   // fault actions taken
  uint64_t proposer_crashes = 0;         // proposers crashed 0-2 ms after their first ACCEPTED
  uint64_t final_epoch = 0;
  std::string finding;                   // the first finding, or the harness's violation
  bool harness_ok = true;                // no gossip invariant broke
  uint64_t trace_hash = 0;
  double virtual_s = 0;
};

ViewChurnResult run_view_churn(const ViewChurnParams& p, uint64_t seed);

// Two members form a view, then a symmetric partition splits them for `split` and heals. Under
// `majority` neither side may move on; under `any` each side may commit a view of its own.
struct PairSplitResult {
  uint64_t divergences = 0;
  bool formed = false;          // the pair committed a view holding both before the split
  bool either_moved = false;    // some member committed a view after the split began
  bool rejoined = false;        // after the heal, both hold one view holding both
  std::string finding;
  bool harness_ok = true;
  uint64_t trace_hash = 0;
  double virtual_s = 0;
};

PairSplitResult run_pair_split(membership::QuorumPolicy policy, uint64_t seed, Time split = Time(10'000'000));

}  // namespace shoal::sim

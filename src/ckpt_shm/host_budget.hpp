// The host's checkpoint memory budget: which held versions to drop so that a new save fits. A pure
// policy over a list; the agent applies it (RankStore::drop_slot) and owns the budget flag.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/result.hpp"

namespace shoal::ckpt {

// One version held in this host's shared memory: a local rank's slot, or later a peer's replica.
struct HeldVersion {
  std::string job;
  uint32_t rank = 0;
  uint64_t step = 0;
  uint64_t sequence = 0;  // the rank's commit order, carried in the version header
  uint64_t bytes = 0;     // memory it occupies (its segment's size)
  bool sealed = false;    // complete and valid; false for abandoned or torn saves
};

struct IncomingSave {
  std::string job;
  uint32_t rank = 0;
  uint64_t bytes = 0;  // the memory the new version needs
};

struct EvictionPlan {
  std::vector<size_t> drop;       // indexes into `held`, in the order to drop them
  uint64_t bytes_after_save = 0;  // held - dropped + incoming, <= budget
};

// Chooses what to drop so that `held` minus the drops plus `incoming` fits in `budget_bytes`.
// `held` lists what stays held while the new save is written: leave out the slot it will overwrite.
//
// Never dropped: the newest sealed version of each (job, rank), by (sequence, step). Dropped
// first: unsealed versions (dead weight from crashed saves), largest first; then older sealed
// versions, lowest step first (the least useful for a restore), largest first among equal steps.
// Nothing is dropped when everything already fits. Fails, naming the budget and the need, when the
// protected versions and the new save alone exceed the budget.
Result<EvictionPlan> plan_eviction(std::span<const HeldVersion> held, const IncomingSave& incoming,
                                   uint64_t budget_bytes);

}  // namespace shoal::ckpt

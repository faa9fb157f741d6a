// The shrink-or-fresh-init decision (see rebuild_plan.hpp).
#include "comm_wrap/rebuild_plan.hpp"

#include "ranks/rank_table.hpp"

namespace shoal::comm {

RebuildPlan plan_rebuild(const ranks::RankTable& before, const ranks::RankTable& after,
                         const OldCommunicatorState& old) {
  if (!old.exists) return FreshInit{"there is no communicator of the old epoch"};
  if (old.released) return FreshInit{"the old communicator was already released"};
  if (after.world_size() == 0) return FreshInit{"the new world has no ranks"};

  const ranks::SurvivorMap survivors = ranks::survivor_ranks(before, after);
  if (!survivors.leaves_only()) {
    return FreshInit{std::to_string(survivors.added_new_ranks.size()) + " rank(s) joined; shrinking cannot add ranks"};
  }
  // ncclCommShrink numbers the survivors 0..k-1 in their old order; the new table must say the same.
  uint32_t expected = 0;
  for (const auto& new_rank : survivors.new_rank_of_old) {
    if (!new_rank) continue;
    if (*new_rank != expected) return FreshInit{"the survivors do not keep their relative order"};
    ++expected;
  }
  if (expected != after.world_size()) return FreshInit{"the survivors do not make up the new world"};
  // NCCL 2.28 refuses a shrink that excludes nobody (invalid argument; seen on an H100/H200): the same
  // world rebuilt after an abort inits afresh.
  if (survivors.removed_old_ranks.empty()) return FreshInit{"nobody left the world: a shrink must exclude a rank"};

  Shrink plan;
  plan.excluded_old_ranks.assign(survivors.removed_old_ranks.begin(), survivors.removed_old_ranks.end());
  plan.abort_in_flight = old.aborted || old.in_flight;
  return plan;
}

}  // namespace shoal::comm

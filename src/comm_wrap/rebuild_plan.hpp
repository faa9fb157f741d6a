// How a rank rebuilds its communicator for a new view: shrink the old one (NCCL's ncclCommShrink) when
// the change is leaves only and the old communicator can still be shrunk, else a fresh init from the
// new epoch's rendezvous. A pure function of the two rank tables and the old communicator's state.
// Gloo always builds fresh; the plan matters for NCCL.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace shoal::ranks {
class RankTable;
}

namespace shoal::comm {

// What the rebuild needs to know about the communicator of the old epoch.
struct OldCommunicatorState {
  bool exists = true;         // false: this rank had none (it is new, or it failed to build one)
  bool released = false;      // its handle is gone (ncclCommAbort'ed or destroyed): nothing to shrink
  bool aborted = false;       // abort() stopped (revoked) its collectives; the handle remains
  bool in_flight = false;     // a collective was still running when the view changed
  bool operator==(const OldCommunicatorState&) const = default;
};

struct Shrink {
  std::vector<int> excluded_old_ranks;  // ascending: ncclCommShrink's exclude list
  bool abort_in_flight = false;         // pass NCCL_SHRINK_ABORT: stop the parent's operations first
  bool operator==(const Shrink&) const = default;
};

struct FreshInit {
  std::string reason;  // for the log: why shrinking was not possible
  bool operator==(const FreshInit&) const = default;
};

using RebuildPlan = std::variant<Shrink, FreshInit>;

// Every survivor must reach the same plan, so the old state should be the same on all of them (it is
// when the agent aborts every rank on a failure); where it is not, the shrink's bounded wait fails and
// the caller falls back to a fresh init.
RebuildPlan plan_rebuild(const ranks::RankTable& before, const ranks::RankTable& after, const OldCommunicatorState& old);

}  // namespace shoal::comm

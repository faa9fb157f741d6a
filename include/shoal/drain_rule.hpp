// DrainRule: whether a drain is under way, agreed between two steps by every elastic loop (shoal::ElasticLoop,
// Python's shoal.torch.Elastic and ElasticFSDP). A drain (`shoal drain`, a spot notice, SIGTERM with
// `--drain-on-sigterm`) asks a host to leave at a step boundary; each rank says whether its own host drains
// (Session::drain_requested), and one small all-reduce tells every rank the same answer:
//   - nobody drains: train on;
//   - some rank drains: every rank saves the step it just completed (when it checkpoints); a draining rank waits
//     until a peer holds that version (Session::wait_checkpoint_safe), says so (Session::report_drained) and
//     ends its loop; the others wait for the view without the draining host (Session::wait_for_view) and go on
//     from the same step. No step is in flight when the host leaves: nothing is discarded or redone.
// Every rank of a loop checks at the same steps, so the rule costs one all-reduce of one integer per step.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "shoal/api.hpp"
#include "shoal/communicator.hpp"

namespace shoal {

struct DrainDecision {
  uint32_t draining_ranks = 0;  // ranks whose host drains
  bool drain = false;           // some rank drains: every rank saves, the draining ones end, the others wait
  bool everyone = false;        // every rank drains: nobody is left to wait for a view
  bool operator==(const DrainDecision&) const = default;
};

class SHOAL_API DrainRule {
 public:
  // How long a draining rank waits for a peer to hold its last version, and a survivor for the view without
  // the draining host, before going on without (a drain's default deadline is 60 s).
  static constexpr std::chrono::milliseconds kWait{30'000};
  // The decision from every rank's word (`draining[r]` is rank r's); pure. Throws shoal::Error for none.
  static DrainDecision decide(const std::vector<bool>& draining);
  // Collective on `comm`: every rank passes whether its host drains and gets the same decision (one all-reduce
  // of one 64-bit integer; a failed peer makes it throw like any collective).
  static DrainDecision agree(Communicator& comm, bool mine);
};

}  // namespace shoal

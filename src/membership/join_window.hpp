// Joins admitted in windows: every view change is a communicator rebuild for every rank, so in a large
// view a view that only adds members waits until a window has passed since the last view was installed,
// while joiners ride along at once with any other change (a removal, an eviction, new metadata). A join
// storm (hosts of a resubmitted allocation arriving over a minute) is then a few views, not one each.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "membership/config.hpp"

namespace shoal::membership {

struct JoinGate {
  bool admit = true;             // the eligible joiners go into the wanted list now
  std::optional<Time> opens_at;  // when held: the instant the window opens
};

// Whether joiners may be added to the next view. `view_size` and `epoch`: the committed view's;
// `other_change`: the wanted list differs from the view without the joiners; `installed_at`: when this
// member installed the committed view (nullopt: unknown, no window). Joiners are held only when all hold:
// the window is on (`window` > 0), the view is of epoch 1 or later and of at least `from` members, nothing
// else changes, and `window` has not passed since `installed_at`.
JoinGate join_gate(size_t view_size, uint64_t epoch, bool other_change, std::optional<Time> installed_at, Time now,
                   Time window, uint32_t from);

}  // namespace shoal::membership

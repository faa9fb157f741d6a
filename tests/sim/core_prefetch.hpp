// The simulator's prefetching of a gossip core it is about to call. Thousands of cores share one
// thread, so each call finds its core cold; the harness sees the next events (EventQueue::ahead) and
// starts loading, a few events early, what each call will read. This is the simulator's business
// alone: the core has no hook for it (see core_prefetch.cpp for how the fields are reached).
#pragma once

#include <string_view>

#include "gossip/swim.hpp"

namespace shoal::sim {

// Starts loading, in `step` 0, 1, 2, 3, what the next call into `core` will read. Each step reads what
// the one before loaded, so the steps should be issued some events apart, the last one just before the
// call. `peer`: the name of the member a packet comes from, when known (empty otherwise). Reads only;
// changes nothing, whatever the step or the name.
void prefetch_core(const gossip::Swim& core, int step, std::string_view peer);

}  // namespace shoal::sim

// The reply to the control request `stats`: the gossip core's counters, its local health and the
// shell's TCP refusals, as one JSON document (for operators and for tests that look for loss).
#pragma once

#include <string>

#include "gossip/swim.hpp"
#include "wire/reject.hpp"

namespace shoal::daemon {

std::string stats_json(const gossip::Swim& swim, const wire::RejectCounters& shell_rejects);

}  // namespace shoal::daemon

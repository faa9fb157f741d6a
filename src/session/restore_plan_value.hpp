// The value rank 0 writes for each host in a restore (plan/W: the parts of the ranks whose report rank W
// wrote), encoded and decoded. The bytes come from the epoch's store, which any key holder can write: the
// decoder bounds and checks them before trusting a holder they name.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "ckpt_shm/restore_plan.hpp"
#include "comm_wrap/rendezvous_store.hpp"

namespace shoal::session {

// `plan`'s parts for `ranks` (or its "none" or refusal, the same for every host).
comm::Bytes encode_host_plan(const ckpt::RestorePlan& plan, std::span<const uint32_t> ranks);

// Rank `rank`'s part of a value read under plan/`writer`; no part: no step is complete. Throws shoal::Error
// on a refusal (its reason), on bytes that do not parse, on a value without a part for `rank`, with more
// holders than the view has members, or naming a holder that is not a member of the view at that address.
std::optional<ckpt::RankPlan> decode_host_plan(const comm::Bytes& value, uint32_t rank, uint32_t writer,
                                               std::span<const ckpt::ExpectedHolder> expected);

}  // namespace shoal::session

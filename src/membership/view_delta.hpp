// A proposal for the next view as a delta of the committed one (docs/agreement.md, "delta proposals"):
// the names removed and the records added, over a base named by its epoch and hash. Every member of the
// base that wants the same member list derives the same delta and the same id, and installs base + delta
// without a body transfer. Pure data and pure functions; the id is BLAKE2b (libsodium), so that a key
// holder cannot craft a second delta with the id of another.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "membership/view.hpp"

namespace shoal::membership {

using DeltaId = std::array<unsigned char, 16>;

struct ViewDelta {
  uint64_t base_epoch = 0;
  uint64_t base_hash = 0;
  std::vector<std::string> removed;  // members of the base that the next view drops or replaces; sorted, unique
  std::vector<ViewMember> added;     // records the next view holds that the base does not; sorted by name
  std::vector<std::string> evicted;  // the removed ones that leave as stragglers; sorted, a subset of removed
  std::vector<std::string> excluded;  // the next view's excluded list, whole (View::excluded); sorted, unique
  bool operator==(const ViewDelta&) const = default;
};

// The delta from `base` to the member list `wanted` (Desired::members; any order). A member whose record
// changed (a restart: another generation; new metadata) is removed by name and added with its new record.
// `evicted` must name removed members. Refuses duplicate names in `wanted` and an `evicted` name that the
// delta does not remove. `excluded`: the next view's excluded list (nullptr: the base's).
Result<ViewDelta> delta_between(const View& base, const std::vector<ViewMember>& wanted,
                                std::vector<std::string> evicted = {},
                                const std::vector<std::string>* excluded = nullptr);

// The next view: base minus removed plus added, epoch base + 1, the base's lineage. Refuses, before building
// anything, a delta of another base (epoch or hash), lists not sorted and unique, a removal of a non-member,
// an addition of a name the base keeps, more members than kMaxViewMembers, text longer than
// kMaxViewTextBytes, an evicted name not removed; then whatever View::make refuses.
Result<View> apply_delta(const View& base, const ViewDelta& delta);

// Checks only the delta's own shape and bounds (sorted, unique, sizes), as a receiver does before it
// allocates anything for a delta from the network.
Status check_delta_shape(const ViewDelta& delta);

// BLAKE2b-128 over "shoal.delta.v1", base_epoch and base_hash (in decimal), the removed names, the added records
// (canonical_encoding of epoch 0 over them), the evicted names, and, only when the next view excludes
// someone, "excluded" and those names; every string length-prefixed (u32): equal deltas, equal ids.
DeltaId delta_id(const ViewDelta& delta);

}  // namespace shoal::membership

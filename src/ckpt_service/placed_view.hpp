// A committed view with what the checkpoint service asks of it on every push, fetch and safety query: its rank
// table and its replica placement, with this host's side of the placement indexed. Computed once, when the view
// comes (CheckpointService::on_view), and shared read-only from then on (PlacedViewPtr): a reader copies the
// pointer under the service's lock and reads without it, so no push handler recomputes the placement (O(N log N)
// at thousands of members, twice per inbound push before) while the agent's loop waits for that lock.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "membership/view.hpp"
#include "ranks/rank_table.hpp"
#include "ranks/replica_placement.hpp"

namespace shoal::ckpt_service {

class PlacedView {
 public:
  // `replicas` per version; `self`: this host's member name.
  PlacedView(membership::View view, uint32_t replicas, std::string self);

  const membership::View& view() const { return view_; }
  uint64_t epoch() const { return view_.epoch(); }
  const ranks::RankTable& table() const { return table_; }
  const ranks::ReplicaPlacement& placement() const { return placement_; }
  // The holders of `owner`'s replicas (nullptr: a witness or no member); a binary search.
  const ranks::ReplicaAssignment* replicas_of(std::string_view owner) const;
  // Whether the placement sends `owner`'s replicas to this host.
  bool holds_for(std::string_view owner) const;
  // Whether the view gives global rank `rank` to `member`.
  bool gives(std::string_view member, uint32_t rank) const;

 private:
  membership::View view_;
  std::string self_;
  ranks::RankTable table_;
  ranks::ReplicaPlacement placement_;
  std::vector<uint32_t> by_owner_;      // indices into placement_.assignments, ordered by owner
  std::vector<std::string> held_here_;  // the owners whose replicas this host holds, sorted
};

using PlacedViewPtr = std::shared_ptr<const PlacedView>;

}  // namespace shoal::ckpt_service

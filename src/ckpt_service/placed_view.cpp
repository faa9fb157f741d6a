// PlacedView: the rank table and the replica placement of one view, derived once, with lookups by name.
#include "ckpt_service/placed_view.hpp"

#include <algorithm>

namespace shoal::ckpt_service {

PlacedView::PlacedView(membership::View view, uint32_t replicas, std::string self)
    : view_(std::move(view)),
      self_(std::move(self)),
      table_(view_),
      placement_(ranks::place_replicas(view_, replicas)),
      held_here_(placement_.held_by(self_)) {
  by_owner_.resize(placement_.assignments.size());
  for (uint32_t i = 0; i < by_owner_.size(); ++i) by_owner_[i] = i;
  std::sort(by_owner_.begin(), by_owner_.end(), [this](uint32_t a, uint32_t b) {
    return placement_.assignments[a].owner < placement_.assignments[b].owner;
  });
  std::sort(held_here_.begin(), held_here_.end());
}

const ranks::ReplicaAssignment* PlacedView::replicas_of(std::string_view owner) const {
  const auto it = std::lower_bound(by_owner_.begin(), by_owner_.end(), owner, [this](uint32_t i, std::string_view o) {
    return placement_.assignments[i].owner < o;
  });
  if (it == by_owner_.end() || placement_.assignments[*it].owner != owner) return nullptr;
  return &placement_.assignments[*it];
}

bool PlacedView::holds_for(std::string_view owner) const {
  return std::binary_search(held_here_.begin(), held_here_.end(), owner, std::less<>());
}

bool PlacedView::gives(std::string_view member, uint32_t rank) const {
  const auto* entry = table_.at(rank);
  return entry != nullptr && entry->member == member;
}

}  // namespace shoal::ckpt_service

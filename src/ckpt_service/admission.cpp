// Admission of checkpoint pushes and fetches against the committed view and its replica placement.
#include "ckpt_service/admission.hpp"

#include <algorithm>

namespace shoal::ckpt_service {

std::string_view name(Refusal r) {
  switch (r) {
    case Refusal::no_view:
      return "no_view";
    case Refusal::not_member:
      return "not_member";
    case Refusal::not_placed:
      return "not_placed";
    case Refusal::not_its_rank:
      return "not_its_rank";
  }
  return "unknown";
}

std::string_view member_of(std::string_view hello_name) { return hello_name.substr(0, hello_name.find('/')); }

std::optional<Refusal> judge_push(const PlacedView* view, std::string_view sender, uint32_t rank,
                                  const PlacedView* previous) {
  if (view == nullptr) return Refusal::no_view;
  // Only an agent pushes (a session's "member/slot" never does), so the name is taken whole.
  if (view->view().find(sender) == nullptr) return Refusal::not_member;
  if (!view->holds_for(sender)) return Refusal::not_placed;
  if (!view->gives(sender, rank) && !(previous != nullptr && previous->gives(sender, rank))) {
    return Refusal::not_its_rank;
  }
  return std::nullopt;
}

std::optional<Refusal> judge_fetch(const PlacedView* view, std::string_view requester) {
  if (view == nullptr) return Refusal::no_view;
  if (view->view().find(member_of(requester)) == nullptr) return Refusal::not_member;
  return std::nullopt;
}

std::optional<Refusal> judge_push(const std::optional<membership::View>& view, std::string_view self,
                                  std::string_view sender, uint32_t replicas, uint32_t rank,
                                  const std::optional<membership::View>& previous) {
  if (!view) return Refusal::no_view;
  const PlacedView now(*view, replicas, std::string(self));
  if (!previous) return judge_push(&now, sender, rank);
  const PlacedView before(*previous, replicas, std::string(self));
  return judge_push(&now, sender, rank, &before);
}

std::optional<Refusal> judge_fetch(const std::optional<membership::View>& view, std::string_view requester) {
  if (!view) return Refusal::no_view;
  if (view->find(member_of(requester)) == nullptr) return Refusal::not_member;
  return std::nullopt;
}

}  // namespace shoal::ckpt_service

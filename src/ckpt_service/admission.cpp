// Admission of checkpoint pushes and fetches against the committed view and its replica placement.
#include "ckpt_service/admission.hpp"

#include <algorithm>

#include "ranks/rank_table.hpp"
#include "ranks/replica_placement.hpp"

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

namespace {

bool holds_rank(const membership::View& view, std::string_view member, uint32_t rank) {
  const ranks::RankTable table(view);
  const auto* entry = table.at(rank);
  return entry != nullptr && entry->member == member;
}

}  // namespace

std::optional<Refusal> judge_push(const std::optional<membership::View>& view, std::string_view self,
                                  std::string_view sender, uint32_t replicas, uint32_t rank,
                                  const std::optional<membership::View>& previous) {
  if (!view) return Refusal::no_view;
  // Only an agent pushes (a session's "member/slot" never does), so the name is taken whole.
  if (view->find(sender) == nullptr) return Refusal::not_member;
  const auto placement = ranks::place_replicas(*view, replicas);
  const auto* assigned = placement.of(sender);
  if (assigned == nullptr || std::find(assigned->holders.begin(), assigned->holders.end(), self) ==
                                 assigned->holders.end()) {
    return Refusal::not_placed;
  }
  if (!holds_rank(*view, sender, rank) && !(previous && holds_rank(*previous, sender, rank))) {
    return Refusal::not_its_rank;
  }
  return std::nullopt;
}

std::optional<Refusal> judge_fetch(const std::optional<membership::View>& view, std::string_view requester) {
  if (!view) return Refusal::no_view;
  if (view->find(member_of(requester)) == nullptr) return Refusal::not_member;
  return std::nullopt;
}

}  // namespace shoal::ckpt_service

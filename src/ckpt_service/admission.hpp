// Who may push a replica to this host or fetch a version from it: decided from the committed view, not
// from what a request claims. A replica is taken only from a member that the view's placement names this
// host a holder for (a forged "rank 0 of world 1, step 10^9" from anyone else never lands, so it can
// neither be restored nor push real replicas out as superseded); a fetch is served only to members.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "ckpt_service/placed_view.hpp"
#include "membership/view.hpp"

namespace shoal::ckpt_service {

enum class Refusal : uint8_t {
  no_view,     // this agent has not committed a view yet
  not_member,  // the requester is not in the view
  not_placed,  // a member, but placement does not send its replicas here
  not_its_rank,  // placed here, but the rank is not one the view (or the one before) gave the sender
};
inline constexpr size_t kRefusals = 4;
std::string_view name(Refusal r);

// The member a hello names: a trainer's sessions say "member/slot".
std::string_view member_of(std::string_view hello_name);

// nullopt when `sender` may push a replica of `rank` to `self` under `view` with `replicas` per version.
// A member pushes only versions its own trainers saved, so `rank` must be one of its ranks in `view` or
// in `previous` (the view this agent committed before it: a version saved before a leave renumbered
// the ranks is re-replicated under the new view). Without this a member could push huge-step versions
// of another member's rank and push that rank's real replicas out of keep_per_rank.
std::optional<Refusal> judge_push(const std::optional<membership::View>& view, std::string_view self,
                                  std::string_view sender, uint32_t replicas, uint32_t rank,
                                  const std::optional<membership::View>& previous = std::nullopt);
// nullopt when `requester` (a hello name) may fetch from this host under `view`.
std::optional<Refusal> judge_fetch(const std::optional<membership::View>& view, std::string_view requester);

// The same decisions against views placed once (placed_view.hpp), as the service makes them: lookups by name,
// no placement computed per request. `view` (nullptr: none yet) is placed for this host, `previous` may be
// nullptr.
std::optional<Refusal> judge_push(const PlacedView* view, std::string_view sender, uint32_t rank,
                                  const PlacedView* previous = nullptr);
std::optional<Refusal> judge_fetch(const PlacedView* view, std::string_view requester);

}  // namespace shoal::ckpt_service

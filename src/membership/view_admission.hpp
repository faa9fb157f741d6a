// Which newer views a member installs, as pure decisions: the admission of one view a peer offered (a
// COMMIT, or a committed view carried by an answer), and the tally of what the members of its own view
// report holding, which confirms a view it cannot take on a peer's word. The rule as a whole, and why, is
// in view_keeper.hpp's header.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "membership/view.hpp"

namespace shoal::membership {

// Why a view (or a ballot) from a peer was refused. Every refusal is counted by cause
// (KeeperStats::refused, the metric shoal_view_refused_total{cause}) and logged at most every 10 s per cause.
enum class ViewRefusal : uint8_t {
  epoch_overflow,  // epoch 2^64-1: installing it would wrap the next epoch to 0 and no view would ever commit
  epoch_jump,      // more than kMaxEpochJump epochs past this member's own
  outsider,        // a COMMIT from a sender in neither this member's view nor the committed one
  unconfirmed,     // a round asking members about a newer view confirmed nothing (a forgery, or still spreading)
  ballot,          // a ballot round far beyond any this member has seen (it would wrap the proposers' rounds)
  count_
};
inline constexpr size_t kViewRefusals = static_cast<size_t>(ViewRefusal::count_);
std::string_view name(ViewRefusal r);

// An honest cluster moves by one epoch per committed view: a member that slept through 2^32 of them is
// not behind, it is being lied to. The bound also keeps every epoch ever installed far from 2^64.
inline constexpr uint64_t kMaxEpochJump = uint64_t{1} << 32;
// Ballot rounds count from 1 in each epoch (ViewKeeper resets them at every install) and grow by one per
// attempt; an acceptor refuses a round more than this far beyond the highest it has seen in the epoch.
inline constexpr uint64_t kMaxBallotStep = uint64_t{1} << 20;

// How a newer view reached this member.
enum class ViewSource : uint8_t {
  commit,  // a COMMIT request: the sender says the view was chosen
  answer,  // the `committed` view in a peer's answer to one of this member's requests
};

enum class Admission : uint8_t {
  ignore,   // not newer than the current view: nothing to do
  install,  // install it now
  confirm,  // only once members of the current view confirm it (Vouches)
  refuse,   // never: `why` says which rule it broke
};

struct AdmissionVerdict {
  Admission action = Admission::ignore;
  std::optional<ViewRefusal> why;  // set for refuse
  bool operator==(const AdmissionVerdict&) const = default;
};

struct OfferedView {
  const View& current;    // this member's committed view (epoch 0: none yet)
  const View& candidate;  // the newer view offered
  ViewSource source = ViewSource::commit;
  std::string_view sender;         // commit: the name the request claims
  uint64_t sender_generation = 0;  // commit: the generation the request claims
  // The candidate is exactly the value this member accepted for its epoch (it can only be current + 1):
  // Paxos' own path, where the proposer saw a majority of the current view accept it.
  bool accepted_here = false;
  // Fewer members of the current view are alive in gossip than a confirmation needs: the cluster moved on
  // without them (ViewKeeper::orphaned).
  bool orphaned = false;
};

// The decision for one offered view, in this order: not newer: ignore; epoch 2^64-1: refuse
// (epoch_overflow); more than kMaxEpochJump ahead: refuse (epoch_jump); a COMMIT whose sender (name and
// generation) is in neither the current view nor the candidate: refuse (outsider); the value this member
// accepted for current + 1: install; no view yet (a joiner) or orphaned: install, as a joiner takes its
// first view; anything else: confirm.
AdmissionVerdict admit(const OfferedView& offer);

// Reports a confirmation needs from the other members of `base`: together with this member itself (when
// it is a member of the base at that generation), a majority of the base. 1 of a view of 2 or 3, 2 of 4 or
// 5, 3 of 6 or 7; at least 1.
size_t confirmations_needed(const View& base, std::string_view self, uint64_t self_generation);

// What members report as their committed views, and the newest view enough of them hold. A report is
// the answer of whoever sits at an address this member chose to ask, never the word of a sender who
// merely names a member:
// - with a base (this member's view, epoch > 0), a report counts when it comes from a member of the base
//   at the address and generation the base records, and a view is confirmed by confirmations_needed(base)
//   of them;
// - without one (a joiner, epoch 0), the caller records only members that gossip shows alive at that
//   address and generation, and a view is confirmed by a majority of its own members (at the address and
//   generation it records for them) reporting exactly it, the joiner itself never counted: a view whose
//   members are not alive in gossip, or do not hold it, or that names only the joiner and one other,
//   confirms nothing. (A joiner admitted by a round takes its view from the round: ViewKeeper.)
// A newer report of a member replaces its older one; views are stored once however many members hold
// them. The keeper makes one only when it needs one (a view to confirm), and a new one at every install.
class Vouches {
 public:
  Vouches() = default;
  Vouches(const View& base, std::string_view self, uint64_t self_generation);

  // `name`, asked at `addr`, answered as `generation` that it holds `committed`. Returns false (and
  // changes nothing) when it does not count: this member itself, a view not newer than the base, or (with
  // a base) not a member of the base at that address and generation.
  bool record(std::string_view name, std::string_view addr, uint64_t generation, const View& committed);
  // The newest view enough members report holding; nullopt when there is none yet.
  std::optional<View> confirmed() const;
  // How many members reported a view newer than the base, and the newest epoch among those views.
  size_t reporters() const { return by_member_.size(); }
  uint64_t newest_reported() const;

 private:
  struct Report {
    std::string addr;
    uint64_t generation = 0;
    size_t view = 0;  // index in views_
  };
  // The reports that count toward views_[index]: with a base, every report of it; without, those of its
  // own members at the address and generation it records.
  size_t holders(size_t index) const;
  // Drops the views no report names any more (bounds memory against a member that invents a view per answer).
  void compact();

  View base_;
  std::string self_;
  uint64_t self_generation_ = 0;
  std::vector<View> views_;                               // distinct views reported
  std::map<std::string, Report, std::less<>> by_member_;  // by the reporter's name
};

}  // namespace shoal::membership

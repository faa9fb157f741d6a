// The admission of offered views and the tally of confirmations (see view_admission.hpp).
#include "membership/view_admission.hpp"

#include <algorithm>
#include <limits>

namespace shoal::membership {

std::string_view name(ViewRefusal r) {
  switch (r) {
    case ViewRefusal::epoch_overflow: return "epoch_overflow";
    case ViewRefusal::epoch_jump: return "epoch_jump";
    case ViewRefusal::outsider: return "outsider";
    case ViewRefusal::unconfirmed: return "unconfirmed";
    case ViewRefusal::ballot: return "ballot";
    case ViewRefusal::count_: break;
  }
  return "?";
}

namespace {

bool holds(const View& v, std::string_view name, uint64_t generation) {
  const ViewMember* m = v.find(name);
  return m != nullptr && m->generation == generation;
}

AdmissionVerdict refused(ViewRefusal why) { return AdmissionVerdict{Admission::refuse, why}; }

}  // namespace

AdmissionVerdict admit(const OfferedView& offer) {
  const uint64_t e = offer.current.epoch();
  const uint64_t t = offer.candidate.epoch();
  if (t <= e) return AdmissionVerdict{Admission::ignore, std::nullopt};
  if (t == std::numeric_limits<uint64_t>::max()) return refused(ViewRefusal::epoch_overflow);
  if (t - e > kMaxEpochJump) return refused(ViewRefusal::epoch_jump);
  if (offer.source == ViewSource::commit && !holds(offer.current, offer.sender, offer.sender_generation) &&
      !holds(offer.candidate, offer.sender, offer.sender_generation)) {
    return refused(ViewRefusal::outsider);
  }
  if (offer.accepted_here) return AdmissionVerdict{Admission::install, std::nullopt};
  if (e > 0 && offer.orphaned) return AdmissionVerdict{Admission::install, std::nullopt};
  return AdmissionVerdict{Admission::confirm, std::nullopt};
}

size_t confirmations_needed(const View& base, std::string_view self, uint64_t self_generation) {
  const size_t majority = base.size() / 2 + 1;
  const size_t mine = holds(base, self, self_generation) ? 1 : 0;
  return std::max<size_t>(majority - mine, 1);
}

Vouches::Vouches(const View& base, std::string_view self, uint64_t self_generation)
    : base_(base), self_(self), self_generation_(self_generation) {}

bool Vouches::record(std::string_view name, std::string_view addr, uint64_t generation, const View& committed) {
  if (committed.epoch() <= base_.epoch() || name == self_) return false;
  if (base_.epoch() > 0) {
    const ViewMember* m = base_.find(name);
    if (m == nullptr || m->addr != addr || m->generation != generation) return false;
  }
  size_t index = views_.size();
  for (size_t i = 0; i < views_.size(); ++i) {
    if (views_[i].hash() == committed.hash() && views_[i] == committed) index = i;
  }
  if (index == views_.size()) views_.push_back(committed);
  by_member_.insert_or_assign(std::string(name), Report{std::string(addr), generation, index});
  if (views_.size() > 2 * by_member_.size() + 4) compact();  // a member that reports a new view every time
  return true;
}

void Vouches::compact() {
  std::vector<View> kept;
  std::vector<size_t> moved(views_.size(), views_.size());
  for (auto& [name, r] : by_member_) {
    if (moved[r.view] == views_.size()) {
      moved[r.view] = kept.size();
      kept.push_back(std::move(views_[r.view]));
    }
    r.view = moved[r.view];
  }
  views_ = std::move(kept);
}

size_t Vouches::holders(size_t index) const {
  size_t n = 0;
  for (const auto& [name, r] : by_member_) {
    if (r.view != index) continue;
    if (base_.epoch() == 0) {
      const ViewMember* m = views_[index].find(name);
      if (m == nullptr || m->addr != r.addr || m->generation != r.generation) continue;
    }
    ++n;
  }
  return n;
}

std::optional<View> Vouches::confirmed() const {
  const View* best = nullptr;
  for (size_t i = 0; i < views_.size(); ++i) {
    if (best != nullptr && views_[i].epoch() <= best->epoch()) continue;
    // A joiner takes no credit for itself: a view of a forger and the joiner alone confirms nothing.
    const size_t needed = base_.epoch() > 0 ? confirmations_needed(base_, self_, self_generation_)
                                            : views_[i].size() / 2 + 1;
    if (holders(i) >= needed) best = &views_[i];
  }
  if (best == nullptr) return std::nullopt;
  return *best;
}

uint64_t Vouches::newest_reported() const {
  uint64_t newest = 0;
  for (const auto& [name, r] : by_member_) newest = std::max(newest, views_[r.view].epoch());
  return newest;
}

}  // namespace shoal::membership

// Holding aside the versions an agent found at start until its first view tells whose they are.
#include "ckpt_service/inherited_versions.hpp"

#include <algorithm>

namespace shoal::ckpt_service {

bool formed_anew(const membership::View& view) {
  return view.size() > 0 && std::all_of(view.members().begin(), view.members().end(),
                                        [&](const membership::ViewMember& m) { return m.join_epoch == view.epoch(); });
}

void InheritedVersions::record(const std::vector<ckpt::HeldSegment>& held) {
  std::lock_guard lock(mu_);
  if (settled_) return;
  for (const auto& h : held) {
    if (h.version) aside_.emplace(h.segment, h);
  }
}

std::vector<ckpt::HeldSegment> InheritedVersions::without(std::vector<ckpt::HeldSegment> held) const {
  std::lock_guard lock(mu_);
  if (aside_.empty()) return held;
  std::erase_if(held, [&](const ckpt::HeldSegment& h) {
    const auto it = aside_.find(h.segment);
    // The same object still holding the same version: a slot a trainer rewrote since is this run's.
    if (it == aside_.end() || !h.version || !it->second.version) return false;
    const auto& now = h.version->id;
    const auto& then = it->second.version->id;
    return now.job == then.job && now.rank == then.rank && now.step == then.step && now.sequence == then.sequence;
  });
  return held;
}

bool InheritedVersions::settled() const {
  std::lock_guard lock(mu_);
  return settled_;
}

std::vector<ckpt::HeldSegment> InheritedVersions::settle(const membership::View& first) {
  std::lock_guard lock(mu_);
  if (settled_) return {};
  settled_ = true;
  std::vector<ckpt::HeldSegment> foreign;
  if (formed_anew(first)) {
    for (auto& [name, h] : aside_) foreign.push_back(std::move(h));
  }
  aside_.clear();
  return foreign;
}

}  // namespace shoal::ckpt_service

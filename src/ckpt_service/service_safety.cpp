// CheckpointService's answer to "is this rank's newest checkpoint safe yet?": what a trainer waits for
// before it exits normally (Session::wait_checkpoint_safe).
#include "ckpt_service/service.hpp"

namespace shoal::ckpt_service {

RankSafety CheckpointService::safety(uint32_t rank) const {
  RankSafety out;
  {
    std::lock_guard lock(mu_);
    if (const auto it = newest_.find(rank); it != newest_.end()) out.committed = it->second;
    if (const auto it = replicated_.find(rank); it != replicated_.end()) out.replicated = it->second;
    // The view's placement was made once, at on_view: a lookup here (the drain asks every 10 ms per rank).
    if (view_) {
      if (const auto* mine = view_->replicas_of(self_)) out.holders = static_cast<uint32_t>(mine->holders.size());
    }
  }
  if (persister_) {
    out.persisting = true;
    if (const auto on_disk = persister_->dir().newest(rank)) out.persisted = on_disk->step;
  }
  return out;
}

}  // namespace shoal::ckpt_service

// CheckpointService: whose segments this host trusts. The replicas are the agent's own; the slots are
// the trainers', whose user the agent learns from the kernel when a trainer reports a sealed version on
// the control socket (SO_PEERCRED), never from anything the trainer claims.
#include "base/log.hpp"
#include "ckpt_service/service.hpp"

namespace shoal::ckpt_service {

ckpt::SegmentOwners CheckpointService::owners() const {
  const uint64_t packed = slot_owner_.load(std::memory_order_acquire);
  ckpt::SegmentOwners out = cfg_.owners;
  out.slots = ckpt::SegmentOwner{static_cast<uid_t>(packed >> 32), static_cast<gid_t>(packed & 0xFFFFFFFFu)};
  return out;
}

void CheckpointService::trust_slot_writer(const ckpt::SegmentOwner& writer) {
  const uint64_t now = pack(writer);
  const uint64_t before = slot_owner_.exchange(now, std::memory_order_acq_rel);
  if (before == now) return;
  log::get(log::Component::ckpt)
      .info("ckpt: local trainers write as uid {} gid {} (the control socket's peer credentials; was uid {}): "
            "their slots are trusted as that user's",
            writer.uid, writer.gid, before >> 32);
}

}  // namespace shoal::ckpt_service

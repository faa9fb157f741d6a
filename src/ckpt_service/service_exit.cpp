// CheckpointService at a clean exit: the agent left the cluster on purpose (SIGTERM from scancel or
// systemctl stop, `shoal leave`, a session that closed), so the shared memory its job used on this host
// is given back. A crash leaves the segments for a restarted agent to adopt, and `shoal ckpt gc` for
// what nobody comes back for.
#include "ckpt_service/service.hpp"
#include "ckpt_shm/held_scan.hpp"
#include "ckpt_shm/replica_store.hpp"
#include "ckpt_shm/shm_segment.hpp"
#include "base/log.hpp"

namespace shoal::ckpt_service {
namespace {}  // namespace

ExitCleanup CheckpointService::remove_segments_at_exit() {
  ExitCleanup out;
  const auto store_name = store();
  if (store_name.empty()) return out;  // no view ever came: no segment was ever this job's
  // Only what this store's owners wrote: a refused object (another user's, a link, a FIFO) is never touched.
  for (const auto& h : ckpt::scan_held(store_name, "/dev/shm", owners())) {
    if (h.refused) {
      ++out.left;
      continue;
    }
    if (auto ok = ckpt::ShmSegment::unlink(h.segment); ok) {
      ++out.removed;
      out.bytes += h.segment_bytes;
    } else {
      ++out.left;
      log::ckpt().warn("ckpt: could not remove {} at exit: {}", h.segment, ok.error().message);
    }
  }
  // Spare segments the replica store keeps ready for the next receive.
  if (auto ok = ckpt::ReplicaStore::remove_all(store_name); !ok) {
    log::ckpt().warn("ckpt: could not remove every replica of store {} at exit: {}", store_name, ok.error().message);
  }
  log::ckpt().info("ckpt: left the cluster: removed {} segment(s) of store {} ({:.1f} MiB){}", out.removed, store_name,
                   static_cast<double>(out.bytes) / (1 << 20),
                   out.left > 0 ? " (" + std::to_string(out.left) + " kept: not this job's to remove)" : "");
  return out;
}

}  // namespace shoal::ckpt_service

// Checkpoint work that no trainer waits for (replicating a version to a peer, keeping a peer's replica,
// persisting to disk) runs at the lowest CPU priority, so that on a host whose cores the trainers keep
// busy it takes only what they leave: a save costs the step its copy, not the copies of its replicas.
// Work a trainer waits for (serving a fetch during a restore) keeps its normal priority.
#pragma once

namespace shoal::ckpt_service {

// Lowers the calling thread (only it: Linux's nice is per thread) to nice 19. Best effort: a failure is
// logged once at debug and ignored.
void lower_this_thread_priority();

}  // namespace shoal::ckpt_service

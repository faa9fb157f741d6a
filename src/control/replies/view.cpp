// JSON conversions of the `view` reply.
#include "control/replies/view.hpp"

namespace shoal::control {

SHOAL_JSON_MEMBERS(ViewMemberRow, name, host, addr, slots, join_epoch, generation)
SHOAL_JSON_MEMBERS(RankRow, rank, local_rank, node_rank, name, slot)
SHOAL_JSON_MEMBERS(ViewReply, self, epoch, hash, lineage, status, reason, world_size, live_of_view, in_view, keyed,
                   members, ranks, evicted, excluded, refused)

}  // namespace shoal::control

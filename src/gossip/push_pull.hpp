// Push-pull anti-entropy: the digest that makes an exchange between two members that agree cost a
// few bytes, the full state sent when they differ, and how a received state is read: a record the
// peer holds as dead becomes a suspicion here (as memberlist does), so that a partition that heals
// does not kill the other side at once; its members get the chance to refute.
#pragma once

#include <string>

#include "gossip.pb.h"
#include "gossip/member_table.hpp"

namespace shoal::gossip {

// The digest of a table.
pb::Digest digest_of(const MemberTable& table);

// Every record, tombstones included (each with its address, so dead members can be re-contacted).
pb::FullState full_state_of(const MemberTable& table);

// The claim a record of a peer's state makes here. `known` is our record of that member, if any.
Claim claim_from_state(const pb::Update& record, const std::string& peer, MemberRef known);

}  // namespace shoal::gossip

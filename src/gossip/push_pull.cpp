// Digest and full state of a member table, and the reading of a peer's state.
#include "gossip/push_pull.hpp"

#include "gossip/codec.hpp"

namespace shoal::gossip {

pb::Digest digest_of(const MemberTable& table) {
  pb::Digest d;
  d.set_hash(table.digest());
  d.set_live_members(static_cast<uint32_t>(table.live_count()));
  return d;
}

pb::FullState full_state_of(const MemberTable& table) {
  pb::FullState s;
  s.mutable_members()->Reserve(static_cast<int>(table.size()));
  for (uint32_t i = 0; i < table.size(); ++i) {
    const MemberRef m = table.at(i);
    pb::Update* u = s.add_members();
    to_proto(m, std::string_view(), *u);
    u->set_addr(std::string(m.addr()));
  }
  s.set_hash(table.digest());
  return s;
}

Claim claim_from_state(const pb::Update& record, const std::string& peer, MemberRef known) {
  Claim c = from_proto(record);
  if (c.state == State::dead && known && is_live(known.state()) && known.generation() == c.id.generation) {
    c.state = State::suspect;
  }
  if (c.state == State::suspect || c.state == State::dead) c.accuser = peer;
  return c;
}

}  // namespace shoal::gossip

// Between the gossip core's structs and the bytes on the wire: updates and probe messages in
// proto/gossip.proto, wrapped in the wire envelope (src/wire/packet). Packets are assembled from
// pre-encoded pieces (the envelope prefix is serialized once per core, each queued update once),
// because every member encodes several packets per probe period.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "gossip.pb.h"
#include "gossip/member_table.hpp"
#include "wire/packet.hpp"

namespace shoal::gossip {

// --- updates -------------------------------------------------------------------------------

void to_proto(const Claim& c, pb::Update& out);
// `refused`: a suspect record's update carries the accuser's refusal evidence; a dead record's carries its own.
void to_proto(MemberRef m, std::string_view accuser, pb::Update& out, bool refused = false);
Claim from_proto(const pb::Update& u);
// A member's metadata as the table stores it: the metadata fields of an Update, serialized (empty
// metadata is 0 bytes).
std::string encode_meta(const MemberMeta& meta);
MemberMeta decode_meta(std::string_view bytes);
State state_of(pb::MemberState s);
// The update as one `Packet.updates` entry (field tag and length included), ready to append to a
// packet body: protobuf concatenates repeated fields.
std::string encode_update_entry(const pb::Update& u);
// A received update is usable: a name, a generation, a known state, an address when alive.
bool valid(const pb::Update& u);

// --- packets -------------------------------------------------------------------------------

// Writes complete UDP packets (header + envelope whose `gossip` field is the body) for one sender.
class PacketWriter {
 public:
  PacketWriter(const std::string& cluster_id, const Identity& self, size_t max_packet_bytes);

  // Body bytes that still fit in one packet.
  size_t body_budget() const { return body_budget_; }
  // The packet carrying `body` (which must fit body_budget()); byte-for-byte what
  // wire::encode_packet makes of the same envelope.
  std::vector<std::byte> finish(const std::string& body) const;

 private:
  std::string prefix_;  // the serialized envelope up to, not including, the gossip field
  size_t body_budget_ = 0;
};

// A body holding one probe message (updates may be appended to it).
std::string ping_body(uint32_t seq);
std::string ack_body(uint32_t seq);
std::string nack_body(uint32_t seq);
std::string ping_req_body(uint32_t seq, const Identity& target);

// Parses and checks the gossip body of a received envelope; a bad one is `malformed`.
Result<pb::Packet, wire::DecodeError> decode_gossip(const wire::Envelope& env);
// The same into a packet the caller keeps (reused, it allocates little); nullopt: `p` is valid.
std::optional<wire::DecodeError> decode_gossip_into(const wire::Envelope& env, pb::Packet& p);

// --- streams -------------------------------------------------------------------------------

// A stream payload: a wire packet (so cluster id and sender are checked as for UDP) of up to
// max_bytes whose gossip field holds `msg`.
Result<std::vector<std::byte>> encode_stream(const wire::Envelope& sender, const google::protobuf::Message& msg,
                                             size_t max_bytes);

}  // namespace shoal::gossip

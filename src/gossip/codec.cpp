// Encoding and checking of gossip updates, probe messages and stream payloads.
#include "gossip/codec.hpp"

#include <cstring>

namespace shoal::gossip {
namespace {

constexpr uint8_t kLenTag(int field) { return static_cast<uint8_t>((field << 3) | 2); }
constexpr int kPacketUpdatesField = 5;    // pb::Packet.updates
constexpr int kEnvelopeGossipField = 11;  // wire::Envelope.gossip

// Writes v as a varint at `at` (room for 10 bytes); returns the end.
std::byte* write_varint(std::byte* at, uint64_t v) {
  while (v >= 0x80) {
    *at++ = std::byte(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  *at++ = std::byte(static_cast<uint8_t>(v));
  return at;
}

void put_varint(std::string& out, uint64_t v) {
  std::byte buf[10];
  out.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(write_varint(buf, v) - buf));
}

size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

pb::MemberState to_proto(State s) {
  switch (s) {
    case State::alive:
      return pb::ALIVE;
    case State::suspect:
      return pb::SUSPECT;
    case State::dead:
      return pb::DEAD;
    case State::left:
      return pb::LEFT;
  }
  return pb::ALIVE;
}

}  // namespace

State state_of(pb::MemberState s) {
  switch (s) {
    case pb::SUSPECT:
      return State::suspect;
    case pb::DEAD:
      return State::dead;
    case pb::LEFT:
      return State::left;
    default:
      return State::alive;
  }
}

namespace {

template <class Msg>
std::string serialized(const Msg& m) {
  std::string s;
  m.SerializeToString(&s);
  return s;
}

void set_meta(const MemberMeta& meta, pb::Update& out) {
  out.set_host(meta.host);
  out.set_slots(meta.slots);
  for (const auto& [k, v] : meta.labels) {
    auto* l = out.add_labels();
    l->set_key(k);
    l->set_value(v);
  }
}

MemberMeta meta_of(const pb::Update& u) {
  MemberMeta meta;
  meta.host = u.host();
  meta.slots = u.slots();
  meta.labels.reserve(static_cast<size_t>(u.labels_size()));
  for (const auto& l : u.labels()) meta.labels.emplace_back(l.key(), l.value());
  return meta;
}

}  // namespace

// Update.host (field 6, length-delimited) and Update.slots (field 7, varint): the whole metadata
// of a member without labels. Every member stores every other's, so a simulator of N members
// encodes and decodes it N^2 times at a warm start: these two fields are done by hand, byte for
// byte what protobuf writes, and anything else goes through protobuf.
constexpr char kHostTag = 0x32;
constexpr char kSlotsTag = 0x38;

std::string encode_meta(const MemberMeta& meta) {
  if (meta == MemberMeta{}) return std::string();  // the common empty case: 0 bytes
  if (meta.labels.empty()) {
    std::string out;
    out.reserve(meta.host.size() + 12);
    if (!meta.host.empty()) {
      out.push_back(kHostTag);
      put_varint(out, meta.host.size());
      out += meta.host;
    }
    if (meta.slots != 0) {
      out.push_back(kSlotsTag);
      put_varint(out, meta.slots);
    }
    return out;
  }
  pb::Update u;
  set_meta(meta, u);
  return serialized(u);
}

namespace {

// Reads a varint at bytes[pos...]; nullopt when cut short or longer than 10 bytes.
std::optional<uint64_t> read_varint(std::string_view bytes, size_t& pos) {
  uint64_t v = 0;
  for (int shift = 0; shift < 70 && pos < bytes.size(); shift += 7) {
    const auto b = static_cast<uint8_t>(bytes[pos++]);
    v |= uint64_t{b & 0x7fu} << shift;
    if (b < 0x80) return v;
  }
  return std::nullopt;
}

// The hand-written reading of host and slots; nullopt for anything else (labels, other fields,
// non-ASCII text that protobuf would check as UTF-8), which protobuf then reads.
std::optional<MemberMeta> decode_host_and_slots(std::string_view bytes) {
  MemberMeta meta;
  size_t pos = 0;
  while (pos < bytes.size()) {
    const char tag = bytes[pos++];
    if (tag == kHostTag) {
      const auto len = read_varint(bytes, pos);
      if (!len || *len > bytes.size() - pos) return std::nullopt;
      const std::string_view host = bytes.substr(pos, static_cast<size_t>(*len));
      for (char ch : host) {
        if (static_cast<unsigned char>(ch) >= 0x80) return std::nullopt;
      }
      meta.host.assign(host);
      pos += static_cast<size_t>(*len);
    } else if (tag == kSlotsTag) {
      const auto v = read_varint(bytes, pos);
      if (!v) return std::nullopt;
      meta.slots = static_cast<uint32_t>(*v);  // protobuf keeps the low 32 bits of a uint32 field
    } else {
      return std::nullopt;
    }
  }
  return meta;
}

}  // namespace

MemberMeta decode_meta(std::string_view bytes) {
  if (bytes.empty()) return MemberMeta{};
  if (auto quick = decode_host_and_slots(bytes)) return std::move(*quick);
  pb::Update u;
  if (!u.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return MemberMeta{};
  return meta_of(u);
}

void to_proto(const Claim& c, pb::Update& out) {
  out.set_name(c.id.name);
  out.set_generation(c.id.generation);
  out.set_incarnation(c.incarnation);
  out.set_state(to_proto(c.state));
  if (c.state == State::alive) {
    out.set_addr(c.id.addr);
    set_meta(c.meta, out);
  }
  if (c.state == State::suspect || c.state == State::dead) {
    out.set_accuser(c.accuser);
    if (c.refused) out.set_refused(true);
  }
}

void to_proto(MemberRef m, std::string_view accuser, pb::Update& out, bool refused) {
  out.set_name(std::string(m.name()));
  out.set_generation(m.generation());
  out.set_incarnation(m.incarnation());
  out.set_state(to_proto(m.state()));
  if (m.state() == State::alive) {
    out.set_addr(std::string(m.addr()));
    if (!m.encoded_meta().empty()) set_meta(m.meta(), out);
  }
  if (m.state() == State::suspect || m.state() == State::dead) {
    out.set_accuser(std::string(accuser));
    if (m.state() == State::dead ? m.refused() : refused) out.set_refused(true);
  }
}

Claim from_proto(const pb::Update& u) {
  Claim c;
  c.id.name = u.name();
  c.id.generation = u.generation();
  c.id.addr = u.addr();
  c.state = state_of(u.state());
  c.incarnation = u.incarnation();
  c.accuser = u.accuser();
  c.refused = (c.state == State::suspect || c.state == State::dead) && u.refused();
  if (c.state == State::alive) c.meta = meta_of(u);
  return c;
}

std::string encode_update_entry(const pb::Update& u) {
  const std::string body = serialized(u);
  std::string out;
  out.reserve(body.size() + 3);
  out.push_back(static_cast<char>(kLenTag(kPacketUpdatesField)));
  put_varint(out, body.size());
  out += body;
  return out;
}

bool valid(const pb::Update& u) {
  if (u.name().empty() || u.generation() == 0) return false;
  if (u.name().size() > MemberTable::kMaxNameBytes || u.addr().size() > MemberTable::kMaxNameBytes) return false;
  if (!pb::MemberState_IsValid(u.state())) return false;
  if (u.state() == pb::ALIVE && u.addr().empty()) return false;
  if (u.host().size() > MemberTable::kMaxHostBytes) return false;
  if (static_cast<size_t>(u.labels_size()) > MemberTable::kMaxLabels) return false;
  for (const auto& l : u.labels()) {
    if (l.key().size() > MemberTable::kMaxLabelKeyBytes || l.value().size() > MemberTable::kMaxLabelValueBytes) {
      return false;
    }
  }
  return true;
}

PacketWriter::PacketWriter(const std::string& cluster_id, const Identity& self, size_t max_packet_bytes) {
  // The address travels in this member's alive record; leaving it out of every packet saves
  // ~20 bytes per probe. Receivers answer to the datagram's source.
  const wire::Envelope env = wire::make_envelope(cluster_id, self.name, self.generation, "");
  env.SerializeToString(&prefix_);
  const size_t fixed = wire::kPacketHeaderBytes + prefix_.size() + 1;
  const size_t room = max_packet_bytes > fixed ? max_packet_bytes - fixed : 0;
  // Leave room for the body's length varint.
  body_budget_ = room > varint_size(room) ? room - varint_size(room) : 0;
}

std::vector<std::byte> PacketWriter::finish(const std::string& body) const {
  // One allocation: header, the envelope prefix, then the gossip field (tag, length, body).
  const size_t env_size = prefix_.size() + 1 + varint_size(body.size()) + body.size();
  std::vector<std::byte> out(wire::kPacketHeaderBytes + env_size);
  const auto n = static_cast<uint32_t>(env_size);
  out[0] = std::byte{'S'};
  out[1] = std::byte{'H'};
  out[2] = std::byte{'L'};
  out[3] = std::byte{1};
  out[4] = std::byte(n >> 24);
  out[5] = std::byte(n >> 16);
  out[6] = std::byte(n >> 8);
  out[7] = std::byte(n);
  std::byte* at = out.data() + wire::kPacketHeaderBytes;
  std::memcpy(at, prefix_.data(), prefix_.size());
  at += prefix_.size();
  *at++ = std::byte{kLenTag(kEnvelopeGossipField)};
  at = write_varint(at, body.size());
  std::memcpy(at, body.data(), body.size());
  return out;
}

namespace {

// A body holding one probe message {seq} in Packet field `field`, byte for byte what protobuf
// writes (proto3 leaves a zero seq out): written by hand because every probe sends two of them.
std::string probe_body(int field, uint32_t seq) {
  std::string out;
  out.push_back(static_cast<char>(kLenTag(field)));
  if (seq == 0) {
    out.push_back(0);
    return out;
  }
  out.push_back(static_cast<char>(1 + varint_size(seq)));
  out.push_back(0x08);  // Ping/Ack/Nack.seq: field 1, varint
  put_varint(out, seq);
  return out;
}

}  // namespace

std::string ping_body(uint32_t seq) { return probe_body(1, seq); }  // Packet.ping
std::string ack_body(uint32_t seq) { return probe_body(2, seq); }   // Packet.ack
std::string nack_body(uint32_t seq) { return probe_body(4, seq); }  // Packet.nack

std::string ping_req_body(uint32_t seq, const Identity& target) {
  pb::Packet p;
  auto* r = p.mutable_ping_req();
  r->set_seq(seq);
  r->set_target(target.name);
  r->set_target_generation(target.generation);
  r->set_target_addr(target.addr);
  return serialized(p);
}

std::optional<wire::DecodeError> decode_gossip_into(const wire::Envelope& env, pb::Packet& p) {
  auto bad = [](std::string why) { return wire::DecodeError{wire::RejectCause::malformed, std::move(why)}; };
  if (!env.has_gossip()) return bad("envelope carries no gossip");
  if (!p.ParseFromString(env.gossip())) return bad("gossip body does not parse");
  if (p.has_ping_req() && (p.ping_req().target().empty() || p.ping_req().target_addr().empty())) {
    return bad("ping-req without a target");
  }
  for (const auto& u : p.updates()) {
    if (!valid(u)) return bad("invalid update about '" + u.name() + "'");
  }
  return std::nullopt;
}

Result<pb::Packet, wire::DecodeError> decode_gossip(const wire::Envelope& env) {
  pb::Packet p;
  if (auto e = decode_gossip_into(env, p)) return Unexpected<wire::DecodeError>{std::move(*e)};
  return p;
}

Result<std::vector<std::byte>> encode_stream(const wire::Envelope& sender, const google::protobuf::Message& msg,
                                             size_t max_bytes) {
  wire::Envelope env = sender;
  msg.SerializeToString(env.mutable_gossip());
  return wire::encode_packet(env, max_bytes);
}

}  // namespace shoal::gossip

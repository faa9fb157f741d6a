// The gossip codec: updates and probe messages survive the round trip, packets assembled from
// pre-encoded pieces equal wire::encode_packet's, and bad bodies are refused as malformed.
#include "gossip/codec.hpp"

#include <doctest/doctest.h>

#include <random>

#include "gossip/member_table.hpp"

using namespace shoal;
using namespace shoal::gossip;

namespace {

Claim alive_claim() {
  return Claim{Identity{"node-17", 99, "10.0.0.17:7946"}, State::alive, 4,
               MemberMeta{"gpu-host-17", 8, {{"rack", "r3"}, {"zone", "a"}}}, ""};
}

wire::Envelope decode(const std::vector<std::byte>& bytes) {
  auto env = wire::decode_packet(bytes, wire::PacketLimits{wire::kMaxPacketBytes, "job"});
  REQUIRE(env.ok());
  return *env;
}

}  // namespace

TEST_CASE("an alive update round-trips with its address and metadata") {
  pb::Update u;
  to_proto(alive_claim(), u);
  REQUIRE(valid(u));
  const Claim back = from_proto(u);
  CHECK(back.id == alive_claim().id);
  CHECK(back.meta == alive_claim().meta);
  CHECK(back.incarnation == 4);
  CHECK(back.state == State::alive);
}

TEST_CASE("a suspicion carries its accuser and no metadata") {
  Claim c = alive_claim();
  c.state = State::suspect;
  c.accuser = "node-3";
  pb::Update u;
  to_proto(c, u);
  CHECK(u.addr().empty());
  CHECK(u.labels_size() == 0);
  const Claim back = from_proto(u);
  CHECK(back.state == State::suspect);
  CHECK(back.accuser == "node-3");
  CHECK(back.id.generation == 99);
  CHECK(u.ByteSizeLong() < 30);
}

TEST_CASE("refusal evidence travels on suspect and dead updates only, in two bytes") {
  Claim c = alive_claim();
  c.state = State::suspect;
  c.accuser = "node-3";
  pb::Update plain;
  to_proto(c, plain);
  c.refused = true;
  pb::Update u;
  to_proto(c, u);
  CHECK(u.refused());
  CHECK(u.ByteSizeLong() == plain.ByteSizeLong() + 2);
  CHECK(from_proto(u).refused);
  c.state = State::dead;
  to_proto(c, u);
  CHECK(from_proto(u).refused);
  // An alive update never carries it, whatever a sender put there.
  pb::Update alive;
  to_proto(alive_claim(), alive);
  CHECK_FALSE(alive.refused());
  alive.set_refused(true);
  CHECK_FALSE(from_proto(alive).refused);
}

TEST_CASE("the packet writer's bytes equal wire::encode_packet's for the same envelope") {
  PacketWriter w("job", Identity{"node-1", 7, "10.0.0.1:7946"}, wire::kMaxPacketBytes);
  pb::Update u;
  to_proto(alive_claim(), u);
  const std::string body = ping_body(42) + encode_update_entry(u);
  const auto bytes = w.finish(body);

  wire::Envelope env = wire::make_envelope("job", "node-1", 7, "");
  env.set_gossip(body);
  auto reference = wire::encode_packet(env);
  REQUIRE(reference.ok());
  CHECK(bytes == *reference);
}

TEST_CASE("probe messages and piggybacked updates decode from one packet") {
  PacketWriter w("job", Identity{"node-1", 7, "a:1"}, wire::kMaxPacketBytes);
  pb::Update u;
  to_proto(alive_claim(), u);
  const auto env = decode(
      w.finish(ping_req_body(9, Identity{"node-2", 3, "b:2"}) + encode_update_entry(u) + encode_update_entry(u)));
  auto p = decode_gossip(env);
  REQUIRE(p.ok());
  REQUIRE(p->has_ping_req());
  CHECK(p->ping_req().seq() == 9);
  CHECK(p->ping_req().target() == "node-2");
  CHECK(p->ping_req().target_generation() == 3);
  CHECK(p->ping_req().target_addr() == "b:2");
  CHECK(p->updates_size() == 2);
  CHECK_FALSE(p->has_ping());
}

TEST_CASE("a ping with no updates is small") {
  PacketWriter w("job-7", Identity{"node-0123", 1234567, "10.0.0.1:7946"}, wire::kMaxPacketBytes);
  CHECK(w.finish(ping_body(100000)).size() <= 45);
  CHECK(w.body_budget() > 1300);
  CHECK(w.body_budget() < wire::kMaxPacketBytes);
}

TEST_CASE("a body filled to the budget still fits in one packet") {
  PacketWriter w("job", Identity{"node-1", 7, "a:1"}, wire::kMaxPacketBytes);
  const auto bytes = w.finish(std::string(w.body_budget(), '\x00'));
  CHECK(bytes.size() <= wire::kMaxPacketBytes);
}

TEST_CASE("gossip bodies that do not parse or carry invalid updates are malformed") {
  wire::Envelope env = wire::make_envelope("job", "n", 1, "");
  SUBCASE("garbage") { env.set_gossip(std::string("\xff\xff\xff\xff", 4)); }
  SUBCASE("an update without a name") {
    pb::Update u;
    u.set_generation(1);
    u.set_addr("x:1");
    env.set_gossip(encode_update_entry(u));
  }
  SUBCASE("an alive update without an address") {
    pb::Update u;
    u.set_name("x");
    u.set_generation(1);
    env.set_gossip(encode_update_entry(u));
  }
  SUBCASE("an update with generation zero") {
    pb::Update u;
    u.set_name("x");
    u.set_addr("x:1");
    env.set_gossip(encode_update_entry(u));
  }
  SUBCASE("an update with more labels than a record may hold") {
    pb::Update u;
    u.set_name("x");
    u.set_generation(1);
    u.set_addr("x:1");
    for (size_t i = 0; i <= MemberTable::kMaxLabels; ++i) {
      auto* l = u.add_labels();
      l->set_key("k" + std::to_string(i));
      l->set_value("v");
    }
    env.set_gossip(encode_update_entry(u));
  }
  SUBCASE("an update with a label value over its cap") {
    pb::Update u;
    u.set_name("x");
    u.set_generation(1);
    u.set_addr("x:1");
    auto* l = u.add_labels();
    l->set_key("k");
    l->set_value(std::string(MemberTable::kMaxLabelValueBytes + 1, 'v'));
    env.set_gossip(encode_update_entry(u));
  }
  SUBCASE("an update with a host name over its cap") {
    pb::Update u;
    u.set_name("x");
    u.set_generation(1);
    u.set_addr("x:1");
    u.set_host(std::string(MemberTable::kMaxHostBytes + 1, 'h'));
    env.set_gossip(encode_update_entry(u));
  }
  SUBCASE("a ping-req without a target") {
    pb::Packet p;
    p.mutable_ping_req()->set_seq(1);
    env.set_gossip(p.SerializeAsString());
  }
  auto r = decode_gossip(env);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().cause == wire::RejectCause::malformed);
}

TEST_CASE("an update at every metadata cap is accepted") {
  wire::Envelope env = wire::make_envelope("job", "n", 1, "");
  pb::Update u;
  u.set_name(std::string(MemberTable::kMaxNameBytes, 'n'));
  u.set_generation(1);
  u.set_addr("x:1");
  u.set_host(std::string(MemberTable::kMaxHostBytes, 'h'));
  for (size_t i = 0; i < MemberTable::kMaxLabels; ++i) {
    auto* l = u.add_labels();
    l->set_key(std::string(MemberTable::kMaxLabelKeyBytes - 4, 'k') + std::to_string(1000 + i));
    l->set_value("v");
  }
  env.set_gossip(encode_update_entry(u));
  CHECK(decode_gossip(env).ok());
}

TEST_CASE("an envelope without a gossip body is malformed for the gossip core") {
  wire::Envelope env = wire::make_envelope("job", "n", 1, "");
  env.mutable_hello()->set_channel(wire::Hello::PUSH_PULL);
  auto r = decode_gossip(env);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().cause == wire::RejectCause::malformed);
}

TEST_CASE("hand-written probe bodies are byte for byte what protobuf serializes") {
  for (const uint32_t seq :
       {0u, 1u, 127u, 128u, 16383u, 16384u, 2097151u, 2097152u, 268435455u, 268435456u, UINT32_MAX}) {
    CAPTURE(seq);
    pb::Packet ping, ack, nack;
    ping.mutable_ping()->set_seq(seq);
    ack.mutable_ack()->set_seq(seq);
    nack.mutable_nack()->set_seq(seq);
    CHECK(ping_body(seq) == ping.SerializeAsString());
    CHECK(ack_body(seq) == ack.SerializeAsString());
    CHECK(nack_body(seq) == nack.SerializeAsString());
    pb::Packet back;
    REQUIRE(back.ParseFromString(ping_body(seq)));
    CHECK(back.has_ping());
    CHECK(back.ping().seq() == seq);
  }
}

TEST_CASE("a written packet is byte for byte wire::encode_packet of the same envelope") {
  const Identity self{"m12", 3, "10.0.0.12:7946"};
  PacketWriter w("sim", self, wire::kMaxPacketBytes);
  for (const size_t body_size : {size_t{0}, size_t{5}, size_t{127}, size_t{128}, size_t{1000}}) {
    CAPTURE(body_size);
    const std::string body(body_size, 'x');
    wire::Envelope env = wire::make_envelope("sim", self.name, self.generation, "");
    env.set_gossip(body);
    auto expected = wire::encode_packet(env);
    REQUIRE(expected);
    CHECK(w.finish(body) == *expected);
  }
}

namespace {

// What protobuf alone makes of stored metadata bytes (the reference for the hand-written reading).
MemberMeta meta_by_protobuf(const std::string& bytes) {
  pb::Update u;
  if (bytes.empty() || !u.ParseFromString(bytes)) return MemberMeta{};
  MemberMeta m{u.host(), u.slots(), {}};
  for (const auto& l : u.labels()) m.labels.emplace_back(l.key(), l.value());
  return m;
}

}  // namespace

TEST_CASE("metadata is encoded byte for byte as protobuf does, and read back the same by both readers") {
  const std::vector<MemberMeta> metas = {
      {},
      {"gpu-host-17", 0, {}},
      {"", 8, {}},
      {"gpu-host-17", 8, {}},
      {std::string(300, 'h'), 4000000000u, {}},
      {"gpu-host-17", 8, {{"rack", "r3"}, {"zone", "a"}}},
  };
  for (const MemberMeta& m : metas) {
    CAPTURE(m.host.size());
    pb::Update u;
    u.set_host(m.host);
    u.set_slots(m.slots);
    for (const auto& [k, v] : m.labels) {
      auto* l = u.add_labels();
      l->set_key(k);
      l->set_value(v);
    }
    const std::string encoded = encode_meta(m);
    CHECK(encoded == u.SerializeAsString());
    CHECK(decode_meta(encoded) == m);
    CHECK(meta_by_protobuf(encoded) == m);
  }
}

TEST_CASE("the hand-written metadata reader agrees with protobuf on 200,000 random and mutated inputs (seed 11)") {
  std::mt19937_64 rng(11);
  const std::string base = encode_meta({"gpu-host-17", 8, {}});
  for (int i = 0; i < 200000; ++i) {
    std::string b;
    if (i % 2 == 0) {
      b = base;  // mutate a valid encoding: flip, cut or extend
      const size_t at = rng() % b.size();
      switch (rng() % 3) {
        case 0:
          b[at] = static_cast<char>(rng());
          break;
        case 1:
          b.resize(at);
          break;
        default:
          b += static_cast<char>(rng() % 2 ? 0x38 : 0x32);
          b += static_cast<char>(rng());
      }
    } else {
      b.resize(rng() % 12);
      for (char& c : b) c = static_cast<char>(rng() % 4 == 0 ? (rng() % 2 ? 0x32 : 0x38) : rng());
    }
    CAPTURE(b);
    CHECK(decode_meta(b) == meta_by_protobuf(b));
  }
}

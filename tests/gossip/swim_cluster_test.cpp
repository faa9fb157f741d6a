// Small clusters of gossip cores wired together by TestNet on a fake clock: joining, failure
// detection, refutation, leaving, restarts, partitions, loss, pauses, stale and garbage input.
#include <doctest/doctest.h>

#include <string_view>
#include <tuple>

#include "gossip/codec.hpp"
#include "gossip/swim.hpp"
#include "test_net.hpp"

using namespace shoal;
using namespace shoal::gossip;
using namespace shoal::gossip::testing;

namespace {

const std::vector<std::string> kFive = {"a", "b", "c", "d", "e"};

void start_all(TestNet& net, const std::vector<std::string>& names) {
  net.start(names[0]);
  for (size_t i = 1; i < names.size(); ++i) net.start(names[i], {names[0]});
}

bool all_see(TestNet& net, const std::vector<std::string>& observers, const std::string& subject, State s) {
  for (const auto& o : observers) {
    if (o != subject && net.view(o, subject) != s) return false;
  }
  return true;
}

bool converged(TestNet& net, const std::vector<std::string>& names) {
  for (const auto& o : names) {
    for (const auto& s : names) {
      if (net.view(o, s) != State::alive) return false;
    }
  }
  return true;
}

std::vector<std::string> except(const std::vector<std::string>& names, const std::string& out) {
  std::vector<std::string> v;
  for (const auto& n : names) {
    if (n != out) v.push_back(n);
  }
  return v;
}

size_t deaths_announced(TestNet& net, const std::string& observer, const std::string& subject) {
  size_t n = 0;
  for (const auto& e : net.state(observer).events) {
    if (e.member.id.name == subject && (e.member.state == State::dead)) ++n;
  }
  return n;
}

// A packet from `sender` (a name with generation 1) whose body is `body`.
std::vector<std::byte> packet_from(const std::string& sender, const std::string& body,
                                   const std::string& cluster = "test") {
  PacketWriter w(cluster, Identity{sender, 1, TestNet::addr_of(sender)}, wire::kMaxPacketBytes);
  return w.finish(body);
}

std::string suspicion_of(const Member& m, const std::string& accuser) {
  pb::Update u;
  to_proto(Claim{m.id, State::suspect, m.incarnation, {}, accuser}, u);
  return encode_update_entry(u);
}

}  // namespace

TEST_CASE("members joining through one seed all learn of each other") {
  TestNet net(1);
  start_all(net, kFive);
  net.run_for(ms_(3000), [&] { return converged(net, kFive); });
  CHECK(converged(net, kFive));
  CHECK(net.now < ms_(1000));
  for (const auto& n : kFive) CHECK(net.node(n).live_count() == 5);
}

TEST_CASE("a crashed member is declared dead by every other member") {
  TestNet net(2);
  start_all(net, kFive);
  net.run_for(ms_(2000));
  REQUIRE(converged(net, kFive));
  net.crash("e");
  const Time crashed_at = net.now;
  const auto others = except(kFive, "e");
  net.run_for(ms_(10000), [&] { return all_see(net, others, "e", State::dead); });
  CHECK(all_see(net, others, "e", State::dead));
  CHECK(net.now - crashed_at < ms_(5000));
  // Nobody else was touched.
  for (const auto& o : others) {
    for (const auto& s : others) CHECK(net.view(o, s) == State::alive);
  }
}

TEST_CASE("a suspected member refutes with a higher incarnation and stays alive") {
  TestNet net(3);
  start_all(net, kFive);
  net.run_for(ms_(2000));
  REQUIRE(converged(net, kFive));
  const Member b = *net.node("b").find("b");
  const uint64_t before = b.incarnation;
  net.inject("b", TestNet::addr_of("a"), packet_from("a", suspicion_of(b, "a")));
  net.run_for(ms_(1000));
  CHECK(net.node("b").find("b")->incarnation > before);
  CHECK(net.node("b").stats().refutations == 1);
  for (const auto& o : kFive) {
    CHECK(net.view(o, "b") == State::alive);
    CHECK(net.node(o).find("b")->incarnation == before + 1);
  }
}

TEST_CASE("a stale accusation that reaches the accused is answered to its accuser, with no new incarnation") {
  // Under loss an accuser may miss the refutation and hold a live member dead. When its stale verdict
  // reaches the member (relayed by anyone), the member tells the accuser its current record directly.
  TestNet net(5);
  start_all(net, kFive);
  net.run_for(ms_(2000));
  REQUIRE(converged(net, kFive));
  const Member b0 = *net.node("b").find("b");
  net.inject("b", TestNet::addr_of("a"), packet_from("a", suspicion_of(b0, "a")));
  net.run_for(ms_(5000));  // refuted, and the refutation's gossip has drained
  const uint64_t refuted = net.node("b").find("b")->incarnation;
  REQUIRE(refuted == b0.incarnation + 1);
  bool told = false;
  net.drop_if = [&](const std::string& from, const std::string& to, const std::vector<std::byte>& bytes) {
    if (from != TestNet::addr_of("b") || to != TestNet::addr_of("c")) return false;
    auto env = wire::decode_packet(bytes, {});
    pb::Packet p;
    if (!env || !p.ParseFromString(env->gossip())) return false;
    for (const auto& u : p.updates()) {
      told = told || (u.name() == "b" && u.state() == pb::ALIVE && u.incarnation() == refuted);
    }
    return false;
  };
  pb::Update stale;
  to_proto(Claim{b0.id, State::dead, b0.incarnation, {}, "c"}, stale);  // c's verdict, relayed by d
  net.inject("b", TestNet::addr_of("d"), packet_from("d", encode_update_entry(stale)));
  net.run_for(ms_(20));
  CHECK(told);
  CHECK(net.node("b").find("b")->incarnation == refuted);
  CHECK(net.node("b").stats().refutations == 1);
}

TEST_CASE("a suspicion that reaches other members is refuted before anyone declares it dead") {
  TestNet net(4);
  start_all(net, kFive);
  net.run_for(ms_(2000));
  REQUIRE(converged(net, kFive));
  const Member b = *net.node("a").find("b");
  // c hears that a suspects b; the suspicion spreads and b hears of it through the gossip.
  net.inject("c", TestNet::addr_of("a"), packet_from("a", suspicion_of(b, "a")));
  net.run_for(ms_(5000));
  for (const auto& o : kFive) {
    CHECK(net.view(o, "b") == State::alive);
    CHECK(deaths_announced(net, o, "b") == 0);
  }
  CHECK(net.node("b").find("b")->incarnation > b.incarnation);
}

TEST_CASE("a graceful leave is seen at once") {
  TestNet net(5);
  start_all(net, kFive);
  net.run_for(ms_(2000));
  REQUIRE(converged(net, kFive));
  net.leave("d");
  net.run_for(ms_(5));
  CHECK(all_see(net, except(kFive, "d"), "d", State::left));
  net.run_for(ms_(5000));
  CHECK(all_see(net, except(kFive, "d"), "d", State::left));
}

TEST_CASE("members leaving at the same moment learn of each other's leaves (the end of a job)") {
  TestNet net(6);
  start_all(net, kFive);
  net.run_for(ms_(2000));
  REQUIRE(converged(net, kFive));
  for (const auto& n : kFive) net.leave(n);
  net.run_for(ms_(5));
  for (const auto& n : kFive) CHECK(all_see(net, except(kFive, n), n, State::left));
}

TEST_CASE("members leaving one after another also tell those that left just before them") {
  // The ones that went first linger as acceptors (the agent's leave linger) and may only go early once
  // they know the rest are gone too.
  TestNet net(7);
  start_all(net, kFive);
  net.run_for(ms_(2000));
  REQUIRE(converged(net, kFive));
  for (const auto& n : kFive) {
    net.leave(n);
    net.run_for(ms_(20));
  }
  for (const auto& n : kFive) CHECK(all_see(net, except(kFive, n), n, State::left));
}

TEST_CASE("a restarted member with a new generation is admitted at once, over its own death record") {
  TestNet net(6);
  start_all(net, kFive);
  net.run_for(ms_(2000));
  REQUIRE(converged(net, kFive));
  net.crash("c");
  const auto others = except(kFive, "c");
  net.run_for(ms_(10000), [&] { return all_see(net, others, "c", State::dead); });
  REQUIRE(all_see(net, others, "c", State::dead));
  net.start("c", {"a"}, 2);
  net.run_for(ms_(300));
  for (const auto& o : others) {
    CHECK(net.view(o, "c") == State::alive);
    CHECK(net.node(o).find("c")->id.generation == 2);
  }
  CHECK(net.node("c").live_count() == 5);
}

TEST_CASE("an ack nobody waits for is counted as stale and changes nothing") {
  TestNet net(7);
  start_all(net, {"a", "b"});
  net.run_for(ms_(1000));
  const auto stale_before = net.node("a").stats().stale_acks;
  const auto acks_before = net.node("a").stats().acks_received;
  pb::Packet p;
  p.mutable_ack()->set_seq(987654);
  net.inject("a", TestNet::addr_of("b"), packet_from("b", p.SerializeAsString()));
  net.run_for(ms_(1));
  CHECK(net.node("a").stats().stale_acks == stale_before + 1);
  CHECK(net.node("a").stats().acks_received == acks_before);
}

TEST_CASE("an ack from the wrong member does not complete a probe") {
  TestNet net(8);
  start_all(net, {"a", "b", "c"});
  net.run_for(ms_(1000));
  net.crash("c");
  // b acks every sequence number a might use for c: none of them may count, c is not b.
  net.drop_if = [&](const std::string& from, const std::string& to, const std::vector<std::byte>& bytes) {
    if (from == TestNet::addr_of("a") && to == TestNet::addr_of("c")) {
      auto env = wire::decode_packet(bytes, {});
      if (env) {
        pb::Packet ping;
        if (ping.ParseFromString(env->gossip()) && ping.has_ping()) {
          pb::Packet ack;
          ack.mutable_ack()->set_seq(ping.ping().seq());
          net.inject("a", TestNet::addr_of("b"), packet_from("b", ack.SerializeAsString()));
        }
      }
    }
    return false;
  };
  net.run_for(ms_(10000), [&] { return net.view("a", "c") == State::dead; });
  CHECK(net.view("a", "c") == State::dead);
  CHECK(net.node("a").stats().stale_acks > 0);
}

TEST_CASE("garbage and foreign packets are refused and counted by cause") {
  TestNet net(9);
  start_all(net, {"a", "b"});
  net.run_for(ms_(500));
  const std::string text = "definitely not a shoal packet";
  const auto* p = reinterpret_cast<const std::byte*>(text.data());
  net.inject("a", "x:1", std::vector<std::byte>(p, p + text.size()));
  pb::Packet ping;
  ping.mutable_ping()->set_seq(1);
  net.inject("a", "x:1", packet_from("x", ping.SerializeAsString(), "other-cluster"));
  net.inject("a", "x:1", packet_from("x", "\xff\xff"));
  net.run_for(ms_(1));
  const auto& r = net.node("a").stats().rejected;
  CHECK(r.get(wire::RejectCause::bad_magic) == 1);
  CHECK(r.get(wire::RejectCause::wrong_cluster) == 1);
  CHECK(r.get(wire::RejectCause::malformed) == 1);
  CHECK(r.total() == 3);
  CHECK_FALSE(net.node("a").find("x").has_value());
}

TEST_CASE("garbage stream requests are refused without an answer") {
  TestNet net(10);
  start_all(net, {"a"});
  Effects out;
  const std::string text = "GET / HTTP/1.1\r\n\r\n";
  auto reply = net.node("a").on_stream_request("x:1", std::as_bytes(std::span(text)), net.now, out);
  CHECK(reply.empty());
  CHECK(net.node("a").stats().rejected.get(wire::RejectCause::bad_magic) == 1);
}

TEST_CASE("at 10% packet loss nobody is declared dead") {
  const std::vector<std::string> names = {"a", "b", "c", "d", "e", "f", "g", "h"};
  TestNet net(11);
  start_all(net, names);
  net.run_for(ms_(3000));
  REQUIRE(converged(net, names));
  net.loss = 0.10;
  net.run_for(ms_(120000));
  for (const auto& o : names) {
    for (const auto& s : names) CHECK(deaths_announced(net, o, s) == 0);
  }
  CHECK(converged(net, names));
}

TEST_CASE("a paused member never causes the death of the members it could not hear") {
  const std::vector<std::string> names = {"a", "b", "c", "d", "e", "f"};
  TestNet net(12);
  start_all(net, names);
  net.run_for(ms_(3000));
  REQUIRE(converged(net, names));
  // Pause f just after it sent a ping, so that the probe's deadlines pass while it sleeps; every
  // 10 s, five times.
  int pauses = 0;
  Time next_pause = net.now;
  net.drop_if = [&](const std::string& from, const std::string&, const std::vector<std::byte>& bytes) {
    if (from != TestNet::addr_of("f") || pauses == 5 || net.now < next_pause) return false;
    auto env = wire::decode_packet(bytes, {});
    pb::Packet p;
    if (env && p.ParseFromString(env->gossip()) && p.has_ping()) {
      net.pause("f", ms_(1500));
      next_pause = net.now + ms_(10000);
      ++pauses;
    }
    return false;
  };
  net.run_for(ms_(55000));
  REQUIRE(pauses == 5);
  // Others may have removed f while it was paused; f must not have removed anyone, nor may the
  // others have removed anyone but f.
  for (const auto& o : names) {
    for (const auto& s : names) {
      if (s != "f") CHECK(deaths_announced(net, o, s) == 0);
    }
  }
  CHECK(net.node("f").stats().stalls_detected >= 5);
  // Its probes that timed out while it was paused did not even raise a suspicion.
  CHECK(net.node("f").stats().suspicions_raised == 0);
  // f is back for everyone.
  net.run_for(ms_(3000));
  CHECK(converged(net, names));
}

TEST_CASE("a healed partition merges again") {
  TestNet net(13);
  start_all(net, {"a", "b", "c", "d"});
  net.run_for(ms_(2000));
  REQUIRE(converged(net, {"a", "b", "c", "d"}));
  for (const auto& x : {"a", "b"}) {
    for (const auto& y : {"c", "d"}) net.block(x, y);
  }
  net.run_for(ms_(10000));
  CHECK(net.view("a", "c") == State::dead);
  CHECK(net.view("c", "a") == State::dead);
  net.heal();
  net.run_for(ms_(60000), [&] { return converged(net, {"a", "b", "c", "d"}); });
  CHECK(converged(net, {"a", "b", "c", "d"}));
}

TEST_CASE("fallback probes go out as probe streams, and only when datagrams fail") {
  const std::vector<std::string> names = {"a", "b", "c", "d"};
  TestNet net(17);
  start_all(net, names);
  net.run_for(ms_(3000));
  REQUIRE(converged(net, names));
  CHECK(net.probe_streams == 0);  // healthy datagrams: joins and push-pulls only
  CHECK(net.anti_entropy_streams > 0);
  // Every datagram to or from d is lost; its TCP side still answers, so the others probe it over TCP.
  net.drop_if = [](const std::string& from, const std::string& to, const std::vector<std::byte>&) {
    return from == TestNet::addr_of("d") || to == TestNet::addr_of("d");
  };
  net.run_for(ms_(2000));
  CHECK(net.probe_streams > 0);
}

TEST_CASE("an isolated member's accusations do not kill the others when it comes back") {
  const std::vector<std::string> names = {"a", "b", "c", "d"};
  TestNet net(16);
  start_all(net, names);
  net.run_for(ms_(2000));
  REQUIRE(converged(net, names));
  for (const auto& y : {"b", "c", "d"}) net.block("a", y);
  net.run_for(ms_(10000));
  for (const auto& y : {"b", "c", "d"}) REQUIRE(net.view("a", y) == State::dead);
  net.heal();
  net.run_for(ms_(60000), [&] { return converged(net, names); });
  CHECK(converged(net, names));
  for (const auto& o : {"b", "c", "d"}) {
    for (const auto& s : {"b", "c", "d"}) CHECK(deaths_announced(net, o, s) == 0);
  }
}

TEST_CASE("a ping to a suspect carries the suspicion (Lifeguard's buddy system)") {
  TestNet net(17);
  start_all(net, {"a", "b", "c"});
  net.run_for(ms_(2000));
  REQUIRE(converged(net, {"a", "b", "c"}));
  bool carried = false;
  net.drop_if = [&](const std::string& from, const std::string& to, const std::vector<std::byte>& bytes) {
    if (from != TestNet::addr_of("a") || to != TestNet::addr_of("b")) return false;
    auto env = wire::decode_packet(bytes, {});
    pb::Packet p;
    if (!env || !p.ParseFromString(env->gossip()) || !p.has_ping()) return false;
    for (const auto& u : p.updates()) carried = carried || (u.name() == "b" && u.state() == pb::SUSPECT);
    return false;
  };
  // Only a hears that c suspects b, and b hears nothing of it but through a's pings.
  const Member b = *net.node("a").find("b");
  net.block("c", "b");
  net.inject("a", TestNet::addr_of("c"), packet_from("c", suspicion_of(b, "c")));
  net.run_for(ms_(3000), [&] { return carried; });
  CHECK(carried);
}

TEST_CASE("push-pull between members that agree exchanges digests only") {
  Config cfg;
  cfg.push_pull_interval_ms = 500;
  TestNet net(14, cfg);
  start_all(net, kFive);
  net.run_for(ms_(3000));
  REQUIRE(converged(net, kFive));
  uint64_t full_before = 0, done_before = 0;
  for (const auto& n : kFive) {
    full_before += net.node(n).stats().push_pull_full_exchanges;
    done_before += net.node(n).stats().push_pulls_completed;
  }
  net.run_for(ms_(10000));
  uint64_t full_after = 0, done_after = 0;
  for (const auto& n : kFive) {
    full_after += net.node(n).stats().push_pull_full_exchanges;
    done_after += net.node(n).stats().push_pulls_completed;
  }
  CHECK(done_after > done_before + 20);
  CHECK(full_after == full_before);
}

TEST_CASE("steady-state traffic stays under 1 KB/s per member each way") {
  const std::vector<std::string> names = {"a", "b", "c", "d", "e", "f", "g", "h"};
  TestNet net(15);
  start_all(net, names);
  net.run_for(ms_(5000));
  REQUIRE(converged(net, names));
  std::vector<Stats> before;
  for (const auto& n : names) before.push_back(net.node(n).stats());
  net.run_for(ms_(60000));
  for (size_t i = 0; i < names.size(); ++i) {
    const auto& s = net.node(names[i]).stats();
    CHECK((s.bytes_out - before[i].bytes_out) / 60 < 1000);
    CHECK((s.bytes_in - before[i].bytes_in) / 60 < 1000);
  }
}

TEST_CASE("the same seed and inputs give the same run") {
  auto run = [](uint64_t seed) {
    TestNet net(seed);
    net.loss = 0.05;
    start_all(net, kFive);
    net.run_for(ms_(3000));
    net.crash("c");
    net.run_for(ms_(5000));
    std::vector<uint64_t> trace;
    for (const auto& n : kFive) {
      const auto& s = net.node(n).stats();
      trace.insert(trace.end(), {s.packets_out, s.bytes_out, s.probes_sent, s.suspicions_raised, s.deaths_declared});
      trace.push_back(net.state(n).events.size());
    }
    return trace;
  };
  CHECK(run(21) == run(21));
  CHECK(run(21) != run(22));
}

TEST_CASE("the default configuration is valid and nonsensical ones are refused with a reason") {
  CHECK(validate(Config{}).ok());
  Config zero;
  zero.probe_interval_ms = 0;
  CHECK_FALSE(validate(zero).ok());
  Config late_nack;
  late_nack.nack_timeout_ms = late_nack.indirect_timeout_ms;
  auto r = validate(late_nack);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("nack_timeout_ms") != std::string::npos);
}

TEST_CASE("a core with zero intervals still runs instead of spinning") {
  Config cfg;
  cfg.gossip_interval_ms = 0;
  cfg.probe_interval_ms = 0;
  TestNet net(18, cfg);
  start_all(net, {"a", "b"});
  net.run_for(ms_(500));
  CHECK(converged(net, {"a", "b"}));
}

TEST_CASE("a roster given at start is taken as known members: events, no join, unusable entries skipped") {
  Config cfg;
  cfg.cluster_id = "test";
  Swim core(cfg, Identity{"a", 1, "10.0.0.1:7946"}, MemberMeta{"a", 8, {}}, 7);
  const std::vector<Member> roster = {
      Member{{"a", 1, "10.0.0.1:7946"}, State::alive, 0, {"a", 8, {}}, {}},  // self: skipped
      Member{{"b", 1, "10.0.0.2:7946"}, State::alive, 0, {"b", 8, {{"rack", "r1"}}}, {}},
      Member{{"c", 3, "10.0.0.3:7946"}, State::alive, 2, {}, {}},
      Member{{"d", 0, "10.0.0.4:7946"}, State::alive, 0, {}, {}},  // no generation: skipped
      Member{{"e", 1, ""}, State::alive, 0, {}, {}},               // alive without an address: skipped
  };
  Effects out;
  core.start({"10.0.0.9:7946"}, roster, Time{0}, out);
  CHECK(core.live_count() == 3);
  CHECK(out.streams.empty());  // joined already: no join request to the seed
  REQUIRE(core.find("b"));
  CHECK(core.find("b")->meta.labels == std::vector<std::pair<std::string, std::string>>{{"rack", "r1"}});
  CHECK(core.find("c")->incarnation == 2);
  CHECK(core.find("c")->id.generation == 3);
  CHECK_FALSE(core.find("d"));
  CHECK_FALSE(core.find("e"));
  size_t joined_events = 0;
  for (const MemberEvent& e : out.events) joined_events += (!e.previous && e.member.id.name != "a") ? 1 : 0;
  CHECK(joined_events == 2);
}


TEST_CASE("a join asks three seeds at a time, the next three at each retry, and late seeds at once") {
  Config cfg;
  cfg.cluster_id = "test";
  Swim core(cfg, Identity{"a", 1, "10.0.0.1:7946"}, MemberMeta{"a", 8, {}}, 7);
  std::vector<std::string> seeds;
  for (int i = 2; i <= 8; ++i) seeds.push_back("10.0.0." + std::to_string(i) + ":7946");
  Effects out;
  core.start(seeds, Time{0}, out);
  auto asked = [](const Effects& fx) {
    std::vector<std::string> to;
    for (const auto& s : fx.streams) to.push_back(s.to);
    return to;
  };
  CHECK(asked(out) == std::vector<std::string>{seeds[0], seeds[1], seeds[2]});
  // Every attempt fails (nobody answers); the retry, jittered between 0.5 and 1.5 join_retry_ms, asks the next three.
  for (const auto& s : out.streams) {
    Effects none;
    core.on_stream_response(s.token, std::nullopt, Time{0}, none);
  }
  Effects retry;
  core.on_tick(ms_(1600), retry);
  CHECK(asked(retry) == std::vector<std::string>{seeds[3], seeds[4], seeds[5]});

  // A member that started with no seed it could use (alone) joins through one learned later, at once.
  Swim alone(cfg, Identity{"z", 1, "10.0.0.20:7946"}, MemberMeta{"z", 8, {}}, 9);
  Effects started;
  alone.start({}, Time{0}, started);
  CHECK(asked(started).empty());
  Effects added;
  alone.add_seeds({"10.0.0.20:7946", "10.0.0.21:7946"}, ms_(10), added);  // its own address is skipped
  CHECK(asked(added) == std::vector<std::string>{"10.0.0.21:7946"});
  Effects again;
  alone.add_seeds({"10.0.0.21:7946"}, ms_(20), again);  // known already: nothing new
  CHECK(asked(again).empty());
}

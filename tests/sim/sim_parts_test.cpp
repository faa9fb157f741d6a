// The simulator's parts on their own: event order, addresses, the network model, the trace hash, the
// invariant rules, the view ledger and the shoal-sim command line. No protocol core runs here.
#include <doctest/doctest.h>

#include <set>

#include "addresses.hpp"
#include "event_queue.hpp"
#include "invariant_checker.hpp"
#include "network.hpp"
#include "rng.hpp"
#include "sim_args.hpp"
#include "trace_hash.hpp"
#include "view_ledger.hpp"

using namespace shoal::sim;
using shoal::gossip::Member;
using shoal::gossip::State;

namespace {

Event at_time(int64_t us, uint32_t tag) {
  Event e;
  e.at = Time(us);
  e.node = tag;
  return e;
}

Member member(const char* name, uint64_t generation, uint64_t incarnation, State state) {
  Member m;
  m.id.name = name;
  m.id.generation = generation;
  m.incarnation = incarnation;
  m.state = state;
  return m;
}

}  // namespace

TEST_CASE("events run in time order, and events at the same time in the order they were scheduled") {
  EventQueue q;
  q.push(at_time(50, 1));
  q.push(at_time(10, 2));
  q.push(at_time(50, 3));
  q.push(at_time(10, 4));
  std::vector<uint32_t> order;
  while (!q.empty()) order.push_back(q.pop().node);
  CHECK(order == std::vector<uint32_t>{2, 4, 1, 3});
  CHECK(q.now() == Time(50));
}

TEST_CASE("against a sorted model: 50,000 random pushes and pops come out in (time, sequence) order, and the next events are seen ahead (seed 3)") {
  EventQueue q;
  std::set<std::pair<int64_t, uint32_t>> model;  // (time, push order) for the events still queued
  SimRng rng(3);
  uint32_t pushed = 0;
  for (int step = 0; step < 50000; ++step) {
    if (rng.below(5) < 3 || q.empty()) {
      const int64_t t = q.now().count() + static_cast<int64_t>(rng.below(1000));  // many ties
      q.push(at_time(t, pushed));
      model.emplace(t, pushed++);
    } else {
      const Event e = q.pop();
      REQUIRE_FALSE(model.empty());
      CHECK(e.at.count() == model.begin()->first);
      CHECK(e.node == model.begin()->second);
      model.erase(model.begin());
    }
    REQUIRE(q.size() == model.size());
    // What the harness prefetches for: the next events, in the order they will run.
    auto expected = model.begin();
    for (size_t i = 0; i < EventQueue::kAhead; ++i) {
      const Event* ahead = q.ahead(i);
      if (expected == model.end()) {
        CHECK(ahead == nullptr);
        continue;
      }
      REQUIRE(ahead != nullptr);
      CHECK(ahead->at.count() == expected->first);
      CHECK(ahead->node == expected->second);
      ++expected;
    }
    CHECK(q.ahead(EventQueue::kAhead) == nullptr);
  }
}

TEST_CASE("an event scheduled in the past runs now: the clock never goes back") {
  EventQueue q;
  q.push(at_time(100, 1));
  q.pop();
  q.push(at_time(20, 2));
  CHECK(q.pop().at == Time(100));
  CHECK(q.now() == Time(100));
  q.advance_to(Time(70));
  CHECK(q.now() == Time(100));
  q.advance_to(Time(300));
  CHECK(q.now() == Time(300));
}

TEST_CASE("member names and addresses map back to their index, and foreign ones to nothing") {
  for (uint32_t i : {0u, 1u, 255u, 256u, 9999u, 65535u}) {
    CHECK(index_of_addr(member_addr(i)) == i);
    CHECK(index_of_name(member_name(i)) == i);
  }
  CHECK(member_addr(300) == "10.0.1.44:7946");
  CHECK_FALSE(index_of_addr("10.0.1.44:7947"));
  CHECK_FALSE(index_of_addr("10.1.1.44:7946"));
  CHECK_FALSE(index_of_addr("10.0.1.256:7946"));
  CHECK_FALSE(index_of_addr("10.0.1.4:7946x"));
  CHECK_FALSE(index_of_name("m007"));
  CHECK_FALSE(index_of_name("node3"));
  CHECK_FALSE(index_of_name("m65536"));
}

TEST_CASE("a symmetric partition blocks both directions between groups and nothing within one") {
  NetworkModel net(6, LinkParams{}, 1);
  net.partition({{0, 1}, {2, 3}});  // 4 and 5 form the remaining group
  CHECK(net.blocked(0, 2));
  CHECK(net.blocked(2, 0));
  CHECK(net.blocked(0, 4));
  CHECK(net.blocked(4, 3));
  CHECK_FALSE(net.blocked(0, 1));
  CHECK_FALSE(net.blocked(3, 2));
  CHECK_FALSE(net.blocked(4, 5));
  CHECK(net.datagram(0, 2).copies == 0);
  CHECK(net.counters().blocked == 1);
  net.heal();
  CHECK_FALSE(net.blocked(0, 2));
  CHECK(net.datagram(0, 2).copies == 1);
}

TEST_CASE("a one-way partition drops only the blocked direction") {
  NetworkModel net(4, LinkParams{}, 1);
  const std::vector<uint32_t> from{0}, to{1, 2};
  net.block_one_way(from, to);
  CHECK(net.blocked(0, 1));
  CHECK(net.blocked(0, 2));
  CHECK_FALSE(net.blocked(1, 0));
  CHECK_FALSE(net.blocked(0, 3));
  CHECK_FALSE(net.blocked(3, 1));
}

TEST_CASE("link loss drops about its share of datagrams (seed 7, 100000 datagrams at 25%)") {
  LinkParams p;
  p.loss = 0.25;
  NetworkModel net(2, p, 7);
  int delivered = 0;
  for (int i = 0; i < 100000; ++i) delivered += net.datagram(0, 1).copies;
  CHECK(delivered > 74000);
  CHECK(delivered < 76000);
  CHECK(net.counters().lost == uint64_t(100000 - delivered));
}

TEST_CASE("a link's own parameters apply to one direction only; member loss applies to all its links") {
  NetworkModel net(3, LinkParams{}, 3);
  LinkParams cut;
  cut.loss = 1.0;
  net.set_link(0, 1, cut);
  int forward = 0, backward = 0;
  for (int i = 0; i < 100; ++i) {
    forward += net.datagram(0, 1).copies;
    backward += net.datagram(1, 0).copies;
  }
  CHECK(forward == 0);
  CHECK(backward == 100);
  net.clear_link(0, 1);
  CHECK(net.datagram(0, 1).copies == 1);

  net.set_member_loss(2, /*ingress=*/1.0, /*egress=*/0.0);
  CHECK(net.datagram(0, 2).copies == 0);
  CHECK(net.datagram(2, 0).copies == 1);
}

TEST_CASE("delays stay within delay + jitter (+ reorder delay), and duplication delivers two copies") {
  LinkParams p;
  p.delay = Time(100);
  p.jitter = Time(150);
  p.duplicate = 1.0;
  NetworkModel net(2, p, 5);
  bool saw_reordered = false;
  for (int i = 0; i < 1000; ++i) {
    const DatagramFate f = net.datagram(0, 1);
    REQUIRE(f.copies == 2);
    for (Time d : f.delay) {
      CHECK(d >= Time(100));
      CHECK(d <= Time(250));
    }
    saw_reordered = saw_reordered || f.delay[1] < f.delay[0];
  }
  CHECK(saw_reordered);

  p.duplicate = 0;
  p.reorder = 1.0;
  p.reorder_delay = Time(5000);
  NetworkModel held(2, p, 5);
  Time longest{0};
  for (int i = 0; i < 1000; ++i) longest = std::max(longest, held.datagram(0, 1).delay[0]);
  CHECK(longest > Time(250));
  CHECK(longest <= Time(5250));
}

TEST_CASE("the network makes the same decisions for the same seed and others for another seed") {
  LinkParams p;
  p.loss = 0.3;
  auto trace = [&](uint64_t seed) {
    NetworkModel net(2, p, seed);
    std::vector<int64_t> out;
    for (int i = 0; i < 200; ++i) {
      const auto f = net.datagram(0, 1);
      out.push_back(f.copies ? f.delay[0].count() : -1);
    }
    return out;
  };
  CHECK(trace(11) == trace(11));
  CHECK(trace(11) != trace(12));
}

TEST_CASE("the trace hash is a function of what was mixed in, in order") {
  const std::vector<std::byte> a{std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4}, std::byte{5},
                                 std::byte{6}, std::byte{7}, std::byte{8}, std::byte{9}};
  auto b = a;
  b[8] = std::byte{10};
  TraceHash h1, h2, h3, h4;
  h1.mix_bytes(a);
  h2.mix_bytes(a);
  h3.mix_bytes(b);
  CHECK(h1.value() == h2.value());
  CHECK(h1.value() != h3.value());
  h1.mix(1);
  h1.mix(2);
  h4.mix_bytes(a);
  h4.mix(2);
  h4.mix(1);
  CHECK(h1.value() != h4.value());
  CHECK(h1.hex().size() == 16);
}

TEST_CASE("invariant rules: incarnations and generations never go back, a dead generation stays dead") {
  SeenRecord alive5 = advance(SeenRecord{}, member("m1", 2, 5, State::alive));
  CHECK_FALSE(broken_rule(SeenRecord{}, member("m1", 1, 0, State::dead)));  // first sight: anything goes
  CHECK_FALSE(broken_rule(alive5, member("m1", 2, 5, State::suspect)));
  CHECK_FALSE(broken_rule(alive5, member("m1", 2, 6, State::alive)));
  CHECK_FALSE(broken_rule(alive5, member("m1", 3, 0, State::alive)));  // a restart starts again at 0
  CHECK(broken_rule(alive5, member("m1", 2, 4, State::alive)).value().find("incarnation") != std::string::npos);
  CHECK(broken_rule(alive5, member("m1", 1, 9, State::alive)).value().find("generation went backwards") !=
        std::string::npos);

  const SeenRecord dead = advance(alive5, member("m1", 2, 5, State::dead));
  CHECK(dead.dead_generation == 2);
  CHECK_FALSE(broken_rule(dead, member("m1", 2, 5, State::left)));
  CHECK_FALSE(broken_rule(dead, member("m1", 3, 0, State::alive)));
  CHECK(broken_rule(dead, member("m1", 2, 5, State::alive)).value().find("resurrection") != std::string::npos);
  CHECK(broken_rule(dead, member("m1", 2, 6, State::alive)).value().find("resurrection") != std::string::npos);
  // The relaxed rule admits a refutation by the member itself, never a stale alive.
  CHECK_FALSE(broken_rule(dead, member("m1", 2, 6, State::alive), Revival::by_refutation));
  CHECK(broken_rule(dead, member("m1", 2, 5, State::alive), Revival::by_refutation));
  const SeenRecord left = advance(dead, member("m1", 2, 5, State::left));
  CHECK(broken_rule(left, member("m1", 2, 9, State::alive), Revival::by_refutation));
  // Once on a newer generation, the older one's death no longer matters.
  const SeenRecord reborn = advance(dead, member("m1", 3, 0, State::alive));
  CHECK_FALSE(broken_rule(reborn, member("m1", 3, 1, State::suspect)));
}

TEST_CASE("the checker keeps the first violation with the time, the observer and the member") {
  ViewLedger ledger(4, 16);
  InvariantChecker checker(ledger);
  CHECK(checker.observe(0, 1, member("m1", 1, 3, State::alive), Time(1000), "event"));
  CHECK(checker.observe(0, 1, member("m1", 1, 3, State::dead), Time(2000), "event"));
  CHECK_FALSE(checker.observe(0, 1, member("m1", 1, 4, State::alive), Time(2500000), "event"));
  REQUIRE(checker.violation());
  const std::string msg = *checker.violation();
  CHECK(msg.find("t=2.500000s") != std::string::npos);
  CHECK(msg.find("observer m0") != std::string::npos);
  CHECK(msg.find("m1") != std::string::npos);
  CHECK(msg.find("resurrection") != std::string::npos);
  CHECK_FALSE(checker.check_bound("the inbox of m2", 10, 5, Time(3000000)));
  CHECK(*checker.violation() == msg);  // the first one stays
  CHECK_FALSE(checker.ok());
}

TEST_CASE("a queue above its bound is a violation") {
  ViewLedger ledger(2, 16);
  InvariantChecker checker(ledger);
  CHECK(checker.check_bound("the inbox of m1", 5, 5, Time(0)));
  CHECK_FALSE(checker.check_bound("the inbox of m1", 6, 5, Time(0)));
  CHECK(checker.violation()->find("the inbox of m1 holds 6, above its bound of 5") != std::string::npos);
}

TEST_CASE("all know all only when every live observer shows every other live member alive at its generation") {
  ViewLedger ledger(3, 16);
  for (uint32_t m = 0; m < 3; ++m) ledger.set_subject(m, 1, true);
  auto show = [&](uint32_t o, uint32_t s, uint32_t gen, State st) {
    ledger.put(o, s, advance(*ledger.get(o, s), member("x", gen, 0, st)));
  };
  for (uint32_t o = 0; o < 3; ++o) {
    for (uint32_t s = 0; s < 3; ++s) {
      if (o != s) show(o, s, 1, State::alive);
    }
  }
  CHECK(ledger.all_know_all());
  show(0, 2, 1, State::suspect);
  CHECK_FALSE(ledger.all_know_all());
  show(0, 2, 1, State::alive);
  CHECK(ledger.all_know_all());
  // m2 restarts: everyone's record of generation 1 is stale until they see generation 2.
  ledger.set_subject(2, 2, true);
  ledger.reset_observer(2);
  CHECK_FALSE(ledger.all_know_all());
  show(0, 2, 2, State::alive);
  show(1, 2, 2, State::alive);
  show(2, 0, 1, State::alive);
  show(2, 1, 1, State::alive);
  CHECK(ledger.all_know_all());
  // A crashed member is no longer expected in anyone's view.
  ledger.set_subject(1, 1, false);
  CHECK(ledger.all_know_all());
  CHECK(ledger.count_showing(2, 2, State::alive) == 1);  // m0; m1 is down and m2 is the subject
  CHECK(ledger.live_tracked_others(2) == 1);
}

TEST_CASE("beyond the tracking limit the ledger follows every k-th observer") {
  ViewLedger ledger(10, 4);
  CHECK(ledger.tracked(0));
  CHECK_FALSE(ledger.tracked(1));
  CHECK(ledger.tracked(3));
  CHECK(ledger.tracked_count() == 4);
  CHECK(ledger.get(1, 0) == nullptr);
  CHECK(ledger.get(3, 9) != nullptr);
}

TEST_CASE("shoal-sim: scenario and flags are parsed; unknown ones and bad values are errors") {
  auto parse = [](std::vector<std::string> args) { return parse_sim_args(args); };
  auto ok = parse({"crash", "--n", "32", "--seed=9", "--loss", "0.05", "--virtual-s", "12.5"});
  REQUIRE(ok);
  CHECK(std::string(ok->scenario->name) == "crash");
  CHECK(ok->inputs.n == 32);
  CHECK(ok->inputs.seed == 9);
  CHECK(ok->inputs.loss == 0.05);
  CHECK(ok->inputs.virtual_s == 12.5);
  CHECK(ok->inputs.delay_ms == 0.1);
  CHECK(parse({"--help"})->help);
  CHECK(parse({"nosuch"}).error().message.find("unknown scenario 'nosuch'") != std::string::npos);
  CHECK(parse({"crash", "--bogus", "1"}).error().message.find("--bogus") != std::string::npos);
  CHECK(parse({"crash", "--loss", "1.5"}).error().message.find("out of range") != std::string::npos);
  CHECK(parse({"crash", "--loss", "abc"}).error().message.find("not a number") != std::string::npos);
  CHECK(parse({"spread", "--update", "sideways"}).error().message.find("leave or join") != std::string::npos);
  CHECK(parse({"stall", "--revival", "refutation"})->inputs.revival == Revival::by_refutation);
  CHECK_FALSE(parse({"stall", "--revival", "sometimes"}));
  CHECK_FALSE(parse({}));
  CHECK(sim_help().find("spread_999_ms") != std::string::npos);
}

TEST_CASE("stream segments are never lost but a lost one costs its retransmission timeout (seed 13, 50% loss)") {
  LinkParams p;
  p.loss = 0.5;
  p.jitter = Time(0);
  NetworkModel net(2, p, 13);
  int on_time = 0;
  for (int i = 0; i < 1000; ++i) {
    const Time d = net.stream_delay(0, 1);
    if (d == Time(100)) {
      ++on_time;
    } else {
      // 100 us plus 200 ms, 200 + 400 ms, ...: always a sum of doubling timeouts.
      const int64_t extra = d.count() - 100;
      CHECK((extra % 200000) == 0);
    }
  }
  CHECK(on_time > 400);
  CHECK(on_time < 600);
  CHECK(net.counters().retransmits > 0);
  const Time syn = net.stream_delay(0, 1, NetworkModel::Segment::handshake);
  CHECK(((syn.count() - 100) % 1000000) == 0);
  p.loss = 0;
  NetworkModel clean(2, p, 13);
  CHECK(clean.stream_delay(0, 1, NetworkModel::Segment::handshake) == Time(100));
}

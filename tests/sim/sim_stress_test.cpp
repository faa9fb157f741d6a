// The gossip core under adverse conditions in the simulator: uniform loss, paused and flapping
// members, and a join storm. Each test states its seed, scenario and property; invariants are
// checked after every event and the member lists audited every virtual second.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "rng.hpp"
#include "sim_test_support.hpp"

using namespace shoal::sim;
using namespace shoal::sim::testing;
using shoal::gossip::State;

TEST_CASE("10% uniform loss for 180 virtual s removes no live member (seed 41, 32 members)") {
  Cluster c(small_cluster(32, 41));
  REQUIRE(start_and_converge(c, sec(30)));
  FalseDeathCounter false_deaths(c);
  c.network().defaults().loss = 0.10;
  c.run_until(c.now() + sec(180));
  INFO(c.violation().value_or("no violation"));
  REQUIRE(c.ok());
  INFO(false_deaths.first);
  CHECK(false_deaths.count == 0);
  CHECK(c.network().counters().lost > 0);
}

TEST_CASE(
    "10% uniform loss for a virtual hour removes no live member of a small cluster, where few members relay "
    "a refutation (seed 1: 6 members, then 8)") {
  // Before suspicions were verified by the holder's own probe, both runs declared a live member
  // dead (at 849 s and 630 s): one member missed the suspect's refutation, relayed only a few times.
  for (const uint32_t n : {6u, 8u}) {
    CAPTURE(n);
    Cluster c(small_cluster(n, 1));
    REQUIRE(start_and_converge(c, sec(30)));
    FalseDeathCounter false_deaths(c);
    c.network().defaults().loss = 0.10;
    c.run_until(c.now() + sec(3600));
    INFO(c.violation().value_or("no violation"));
    REQUIRE(c.ok());
    INFO(false_deaths.first);
    CHECK(false_deaths.count == 0);
  }
}

TEST_CASE(
    "a member paused for less than its grace is never declared dead (seed 51, 16 members, m3 paused "
    "10 times for 80% of the grace, 2 s apart)") {
  Cluster c(small_cluster(16, 51));
  REQUIRE(start_and_converge(c, sec(30)));
  // Grace: the direct and indirect probe timeouts plus the shortest suspicion timeout
  // (suspicion_min_ms stretched by log10 N, at least 1): a shorter pause cannot cost the member.
  const auto& g = c.options().gossip;
  const double grace_ms =
      g.probe_timeout_ms + g.indirect_timeout_ms + g.suspicion_min_ms * std::max(1.0, std::log10(16.0));
  const Time pause = Time(static_cast<int64_t>(grace_ms * 0.8 * 1000));
  FalseDeathCounter false_deaths(c);
  for (int i = 0; i < 10; ++i) {
    c.pause(3, pause);
    c.run_until(c.now() + sec(2));
  }
  INFO(c.violation().value_or("no violation"));
  REQUIRE(c.ok());
  INFO(false_deaths.first);
  CHECK(false_deaths.count == 0);
  CHECK(c.ledger().all_know_all());
}

TEST_CASE(
    "a flapping member (paused 1.5 s every 3 s for 30 s) costs nobody else and is back in every view "
    "within 30 s after (seed 53, 16 members, m4)") {
  Cluster c(small_cluster(16, 53, Revival::by_refutation));
  REQUIRE(start_and_converge(c, sec(30)));
  uint64_t others_declared_dead = 0;
  EventTap tap;
  tap.event = [&](uint32_t, uint32_t subject, const shoal::gossip::MemberEvent& e, Time) {
    if (subject != 4 && e.member.state == State::dead) ++others_declared_dead;
  };
  c.add_observer(&tap);
  for (int i = 0; i < 10; ++i) {
    c.pause(4, ms(1500));
    c.run_until(c.now() + sec(3));
  }
  INFO(c.violation().value_or("no violation"));
  REQUIRE(c.ok());
  CHECK(others_declared_dead == 0);
  const bool back = c.run_until(c.now() + sec(30), ms(10), [&] { return c.ledger().all_know_all(); });
  INFO(c.violation().value_or("no violation"));
  REQUIRE(c.ok());
  CHECK(back);
}

TEST_CASE("a join storm: 64 members starting within one second all know all within 20 s (seed 61)") {
  Cluster c(small_cluster(64, 61));
  SimRng rng(61);
  for (uint32_t m = 0; m < 64; ++m) c.start(m, Time(static_cast<int64_t>(rng.below(1000000))));
  const bool joined = c.run_until(sec(20), ms(10), [&] { return c.ledger().all_know_all(); });
  INFO(c.violation().value_or("no violation"));
  REQUIRE(c.ok());
  CHECK(joined);
}

TEST_CASE(
    "duplicated and reordered datagrams break no invariant (seed 71, 16 members, 20% duplicates, "
    "20% held back up to 5 ms, 30 s)") {
  ClusterOptions o = small_cluster(16, 71);
  o.link.duplicate = 0.2;
  o.link.reorder = 0.2;
  o.link.reorder_delay = ms(5);
  Cluster c(o);
  REQUIRE(start_and_converge(c, sec(30)));
  FalseDeathCounter false_deaths(c);
  c.crash(9);
  c.run_until(c.now() + sec(30));
  INFO(c.violation().value_or("no violation"));
  REQUIRE(c.ok());
  CHECK(false_deaths.count == 0);
  CHECK(everyone_shows(c, 9, State::dead));
  CHECK(c.network().counters().duplicated > 0);
}

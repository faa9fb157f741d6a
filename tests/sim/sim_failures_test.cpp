// Failure handling of the real gossip core in the simulator: crash detection, a partition and its
// heal, and a restarted member rejoining. Each test states its seed, scenario and property; the
// invariants (monotone incarnations, no resurrection, bounded queues, member lists matching the
// events) are checked after every event and audited every virtual second.
#include <doctest/doctest.h>

#include "sim_test_support.hpp"

using namespace shoal::sim;
using namespace shoal::sim::testing;
using shoal::gossip::State;

TEST_CASE("a crashed member is seen dead by every live member within 5 s (seed 11, 16 members, m5 crashes)") {
  Cluster c(small_cluster(16, 11));
  REQUIRE(start_and_converge(c, sec(30)));
  FalseDeathCounter false_deaths(c);
  const Time crashed_at = c.now();
  c.crash(5);
  const bool seen = c.run_until(crashed_at + sec(5), ms(10), [&] { return everyone_shows(c, 5, State::dead); });
  INFO(c.violation().value_or("no violation"));
  REQUIRE(c.ok());
  CHECK(seen);
  CHECK(false_deaths.count == 0);
  // And it stays dead: nothing brings generation 1 of m5 back.
  c.run_until(c.now() + sec(10));
  CHECK(c.ok());
  CHECK(everyone_shows(c, 5, State::dead));
}

TEST_CASE(
    "a partition makes each side see the other dead, and after the heal all are alive again "
    "(seed 21, 12 members, {m0..m5} | {m6..m11}, split seen within 20 s)") {
  Cluster c(small_cluster(12, 21, Revival::by_refutation));
  REQUIRE(start_and_converge(c, sec(30)));
  std::vector<uint32_t> left_side, right_side;
  for (uint32_t m = 0; m < 12; ++m) (m < 6 ? left_side : right_side).push_back(m);
  c.network().partition({left_side, right_side});
  auto split_seen = [&] {
    for (uint32_t a : left_side) {
      for (uint32_t b : right_side) {
        const SeenRecord* ab = c.ledger().get(a, b);
        const SeenRecord* ba = c.ledger().get(b, a);
        if (ab->state != State::dead || ba->state != State::dead) return false;
      }
    }
    return true;
  };
  const bool split = c.run_until(c.now() + sec(20), ms(10), split_seen);
  INFO(c.violation().value_or("no violation"));
  REQUIRE(c.ok());
  CHECK(split);
  c.network().heal();
  const bool merged = c.run_until(c.now() + sec(60), ms(10), [&] { return c.ledger().all_know_all(); });
  INFO(c.violation().value_or("no violation"));
  REQUIRE(c.ok());
  CHECK(merged);
}

TEST_CASE("a one-way partition does not leave anyone dead for good once healed (seed 23, 8 members, m0 deaf)") {
  Cluster c(small_cluster(8, 23, Revival::by_refutation));
  REQUIRE(start_and_converge(c, sec(30)));
  const std::vector<uint32_t> others{1, 2, 3, 4, 5, 6, 7}, deaf{0};
  c.network().block_one_way(others, deaf);  // m0 can send but hears nothing
  c.run_until(c.now() + sec(10));
  REQUIRE(c.ok());
  c.network().heal();
  const bool merged = c.run_until(c.now() + sec(60), ms(10), [&] { return c.ledger().all_know_all(); });
  INFO(c.violation().value_or("no violation"));
  REQUIRE(c.ok());
  CHECK(merged);
}

TEST_CASE("a restarted member (new generation) is alive in every view within 3 s (seed 31, 16 members, m7)") {
  Cluster c(small_cluster(16, 31));
  REQUIRE(start_and_converge(c, sec(30)));
  FalseDeathCounter false_deaths(c);
  const Time t0 = c.now();
  c.restart(7);
  CHECK(c.generation(7) == 2);
  const bool back = c.run_until(t0 + sec(3), ms(10), [&] { return c.ledger().all_know_all(); });
  INFO(c.violation().value_or("no violation"));
  REQUIRE(c.ok());
  CHECK(back);
  // Nobody went through declaring generation 2 dead on the way.
  CHECK(false_deaths.count == 0);
}

TEST_CASE("three members crashing at once are all seen dead within 5 s (seed 13, 32 members)") {
  Cluster c(small_cluster(32, 13));
  REQUIRE(start_and_converge(c, sec(30)));
  const Time t0 = c.now();
  for (uint32_t m : {3u, 17u, 30u}) c.crash(m);
  const bool seen = c.run_until(t0 + sec(5), ms(10), [&] {
    return everyone_shows(c, 3, State::dead) && everyone_shows(c, 17, State::dead) &&
           everyone_shows(c, 30, State::dead);
  });
  INFO(c.violation().value_or("no violation"));
  REQUIRE(c.ok());
  CHECK(seen);
}

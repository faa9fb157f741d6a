// Determinism: a run is a function of its seed. Two runs with the same seed produce the same trace
// hash (every delivered packet and every member event, with their times); another seed another one.
#include <doctest/doctest.h>

#include "scenario.hpp"
#include "sim_test_support.hpp"

using namespace shoal::sim;
using namespace shoal::sim::testing;

namespace {

// A run exercising every source of randomness: loss, jitter, duplication, a pause, a crash, a restart.
struct RunSummary {
  uint64_t hash;
  uint64_t events;
  bool ok;
  std::string violation;
};

RunSummary busy_run(uint64_t seed) {
  ClusterOptions o = small_cluster(12, seed, Revival::by_refutation);  // the pause may cost m2 a false death
  o.link.duplicate = 0.05;
  Cluster c(o);
  c.start_all(Time(0));
  c.run_until(sec(5));
  c.network().defaults().loss = 0.05;
  c.pause(2, ms(800));
  c.crash(5);
  c.run_until(sec(8));
  c.restart(7);
  c.run_until(sec(12));
  return {c.trace().value(), c.events_processed(), c.ok(), c.violation().value_or("")};
}

}  // namespace

TEST_CASE(
    "the same seed gives the same trace hash, another seed another (seeds 5 and 6, 12 members, 12 s "
    "with loss, duplicates, a pause, a crash and a restart)") {
  const RunSummary a = busy_run(5), b = busy_run(5), other = busy_run(6);
  INFO(a.violation);
  CHECK(a.ok);
  CHECK(a.events > 1000);
  CHECK(a.hash == b.hash);
  CHECK(a.events == b.events);
  CHECK(a.hash != other.hash);
}

TEST_CASE("a scenario's JSON figures and trace hash replay exactly from the seed (crash, seed 9, 16 members)") {
  ScenarioInputs in;
  in.n = 16;
  in.seed = 9;
  in.repeat = 2;
  const ScenarioOutcome first = run_crash(in), second = run_crash(in);
  INFO(first.error.value_or("no error"));
  CHECK_FALSE(first.error);
  CHECK(first.trace_hash == second.trace_hash);
  CHECK(first.figures.str() == second.figures.str());
  in.seed = 10;
  CHECK(run_crash(in).trace_hash != first.trace_hash);
}

TEST_CASE("the speed scenario runs a warm cluster with no removals and replays from its seed (seed 3, 128 members, 5 s)") {
  ScenarioInputs in;
  in.n = 128;
  in.n_given = true;
  in.seed = 3;
  in.virtual_s = 5;
  const ScenarioOutcome first = run_speed(in), second = run_speed(in);
  INFO(first.error.value_or("no error"));
  REQUIRE_FALSE(first.error);
  CHECK(first.trace_hash == second.trace_hash);
  CHECK(first.n == 128u);  // the line's "n" is the members run
  const std::string figures = first.figures.str();
  INFO(figures);
  CHECK(figures.find("\"members\":128") != std::string::npos);
  CHECK(figures.find("\"false_removals\":0") != std::string::npos);
  CHECK(figures.find("\"all_alive_at_end\":true") != std::string::npos);
  // 128 members probing every 150 ms for 5 s: about 13 datagrams per member-second (pings and acks).
  const size_t at = figures.find("\"datagrams\":");
  REQUIRE(at != std::string::npos);
  const uint64_t datagrams = std::stoull(figures.substr(at + 12));
  CHECK(datagrams > 128 * 5 * 10);
  CHECK(datagrams < 128 * 5 * 20);
  CHECK(first.virtual_s == doctest::Approx(5.0));
}

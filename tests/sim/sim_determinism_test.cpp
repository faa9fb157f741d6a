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

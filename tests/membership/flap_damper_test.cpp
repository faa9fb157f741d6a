// The escalating hold-down (membership/flap_damper.hpp): the rule as a table, the damper's count of a host's
// failures across generations, and keepers that readmit a host that keeps failing later each time.
#include "membership/flap_damper.hpp"

#include <doctest/doctest.h>

#include "keeper_cluster.hpp"

using namespace shoal::membership;
using namespace shoal::membership::testing;
using shoal::gossip::State;
using std::chrono::milliseconds;
using std::chrono::seconds;

TEST_CASE("hold_down_for doubles per failure in a row, a restart one failure behind, never above the cap") {
  struct Row {
    uint32_t failures;
    bool restarted;
    int64_t base_s, cap_s, want_s;
  };
  const Row rows[] = {
      {1, false, 10, 600, 10},                               // a first flap: the base
      {2, false, 10, 600, 20},                               // then doubled per failure
      {3, false, 10, 600, 40},    {7, false, 10, 600, 600},  // 640 capped
      {1, true, 10, 600, 0},                                 // a restart after a single failure: at once
      {2, true, 10, 600, 10},                                // a second failure: the base, even for a new process
      {3, true, 10, 600, 20},     {8, true, 10, 600, 600},   // 640 capped
      {1000, true, 10, 600, 600},                            // no overflow however many
      {3, false, 10, 5, 10},                                 // a cap below the base: the base
      {0, false, 10, 600, 10},                               // no failure counted (an eviction's floor): the base
  };
  for (const Row& r : rows) {
    CAPTURE(r.failures);
    CAPTURE(r.restarted);
    CHECK(hold_down_for(r.failures, r.restarted, seconds(r.base_s), seconds(r.cap_s)) == seconds(r.want_s));
  }
}

TEST_CASE("the damper counts a host's failures across generations and forgets them after a quiet hour") {
  FlapDamper damper(Escalation{seconds(600), seconds(3600)});
  const auto hold = seconds(10);
  damper.observe({member(0), member(1)}, Time(0));
  damper.removed("h1", 1, seconds(1));  // first failure: dead
  CHECK(damper.failures("h1") == 1);
  damper.observe({member(0), member(1, State::alive, 2)}, seconds(2));
  CHECK(damper.eligible("h1", 2, seconds(2), hold));  // its restart: at once

  damper.removed("h1", 2, seconds(100));  // the restarted process fails too
  CHECK(damper.failures("h1") == 2);
  damper.observe({member(0), member(1, State::alive, 3)}, seconds(101));
  CHECK_FALSE(damper.eligible("h1", 3, seconds(105), hold));
  CHECK(damper.eligible_at("h1", 3, hold) == seconds(111));  // the base, once seen alive after the removal

  damper.removed("h1", 3, seconds(200));  // and again
  damper.observe({member(0), member(1, State::alive, 4)}, seconds(201));
  CHECK(damper.failures("h1") == 3);
  CHECK(damper.eligible_at("h1", 4, hold) == seconds(221));
  // The same process back after a flap waits twice as long as a new one would.
  damper.observe({member(0), member(1, State::alive, 3)}, seconds(201));
  CHECK(damper.eligible_at("h1", 3, hold) == seconds(241));

  // More than an hour later the count starts again: a restart is admitted at once.
  damper.removed("h1", 4, seconds(200 + 3601));
  CHECK(damper.failures("h1") == 1);
  damper.observe({member(0), member(1, State::alive, 5)}, seconds(200 + 3602));
  CHECK(damper.eligible("h1", 5, seconds(200 + 3602), hold));
}

TEST_CASE("a newer process replacing its host's older one in the view counts the older one's failure") {
  FlapDamper damper;
  const auto hold = seconds(10);
  damper.observe({member(0), member(1, State::alive, 2)}, seconds(5));
  CHECK(damper.eligible("h1", 2, seconds(5), hold, true));  // no failure before: replaces at once
  damper.removed("h1", 1, seconds(6));                      // the view that replaced it committed
  damper.observe({member(0), member(1, State::alive, 3)}, seconds(50));
  CHECK(damper.eligible_at("h1", 3, hold, true) == seconds(60));  // the second failure: held, not replaced
}

TEST_CASE("a graceful leave is not a failure: its restart is admitted at once, the count unchanged") {
  FlapDamper damper;
  const auto hold = seconds(10);
  damper.observe({member(0), member(1)}, Time(0));
  damper.removed("h1", 1, seconds(1));
  damper.removed("h1", 1, seconds(50), std::nullopt, false);  // later drained
  CHECK(damper.failures("h1") == 1);
  damper.observe({member(0), member(1, State::alive, 2)}, seconds(60));
  CHECK(damper.eligible("h1", 2, seconds(60), hold));
  // The same process that left comes back only after the plain hold-down, as before.
  damper.observe({member(0), member(1)}, seconds(60));
  CHECK(damper.eligible_at("h1", 1, hold) == seconds(70));
}

TEST_CASE("an eviction counts as a failure and keeps its own longer hold-down") {
  FlapDamper damper;
  damper.observe({member(0), member(1)}, Time(0));
  damper.removed("h1", 1, seconds(10), seconds(60));
  CHECK(damper.failures("h1") == 1);
  damper.observe({member(0), member(1, State::alive, 2)}, seconds(11));
  CHECK(damper.eligible_at("h1", 2, seconds(10)) == seconds(71));  // a restart does not shorten it
}

TEST_CASE("keepers readmit a restarted host at once after one crash, and hold it down after the second") {
  Config cfg;
  cfg.hold_down = milliseconds(2000);
  KeeperCluster c(3, cfg);
  c.everyone_sees(range(3));
  c.run_for(milliseconds(300));
  REQUIRE(c.node(0).view().epoch() == 1);

  // First crash and restart: the new process replaces the old one in the next view.
  const std::vector<shoal::gossip::Member> second = {member(0), member(1), member(2, State::alive, 2)};
  c.set_gossip(0, second);
  c.set_gossip(1, second);
  c.run_for(milliseconds(300));
  REQUIRE(c.node(0).view().epoch() == 2);
  CHECK(c.node(0).view().find("h2")->generation == 2);

  // Second crash, and systemd restarts it again: out of the view, held down for the base hold-down.
  const std::vector<shoal::gossip::Member> third = {member(0), member(1), member(2, State::alive, 3)};
  c.set_gossip(0, third);
  c.set_gossip(1, third);
  c.run_for(milliseconds(1000));
  REQUIRE(c.node(0).view().epoch() == 3);
  CHECK(c.node(0).view().find("h2") == nullptr);
  CHECK(c.node(1).view().find("h2") == nullptr);
  c.run_for(milliseconds(1500));  // 2.5 s after its restart was first seen: past the 2 s hold-down
  CHECK(c.node(0).view().epoch() == 4);
  REQUIRE(c.node(0).view().find("h2") != nullptr);
  CHECK(c.node(0).view().find("h2")->generation == 3);
  check_one_view_per_epoch(c);
}

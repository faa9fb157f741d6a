// Lifeguard's suspicion timeout arithmetic, confirmations, and the local health multiplier.
#include "gossip/suspicion.hpp"

#include <doctest/doctest.h>

#include <cstdlib>

#include "gossip/local_health.hpp"

using namespace shoal::gossip;
using std::chrono::milliseconds;

TEST_CASE("suspicion bounds grow with log10 of the cluster size, never below the base") {
  auto b16 = suspicion_bounds(milliseconds(200), 4.0, 3, 16);
  CHECK(b16.min == Time{240824});  // 200 ms * log10(16)
  CHECK(b16.max == Time{963296});
  CHECK(b16.k == 3);
  auto b5 = suspicion_bounds(milliseconds(200), 4.0, 3, 5);
  CHECK(b5.min == milliseconds(200));
  auto b1024 = suspicion_bounds(milliseconds(200), 4.0, 3, 1024);
  CHECK(b1024.min == Time{602060});
}

TEST_CASE("with fewer members than k + 2 no confirmation can come, so the timeout is the minimum") {
  auto b = suspicion_bounds(milliseconds(200), 4.0, 3, 4);
  CHECK(b.k == 0);
  CHECK(suspicion_timeout(b, 0) == b.min);
}

TEST_CASE("the timeout starts at max and reaches min after k confirmations, logarithmically") {
  SuspicionBounds b{milliseconds(1000), milliseconds(5000), 3};
  CHECK(suspicion_timeout(b, 0) == milliseconds(5000));
  // 5000 - 4000 * log(2) / log(4) = 3000
  CHECK(suspicion_timeout(b, 1) == milliseconds(3000));
  CHECK(std::abs(suspicion_timeout(b, 2).count() - 1830075) <= 1);  // 5000 - 4000 * log 3 / log 4 ms, in us
  CHECK(suspicion_timeout(b, 3) == milliseconds(1000));
  CHECK(suspicion_timeout(b, 10) == milliseconds(1000));
}

TEST_CASE("confirmations count each member once and never the accuser") {
  SuspicionTimer t(milliseconds(100), SuspicionBounds{milliseconds(1000), milliseconds(5000), 3}, "accuser");
  CHECK(t.deadline() == milliseconds(5100));
  CHECK_FALSE(t.confirm("accuser"));
  CHECK(t.confirm("x"));
  CHECK_FALSE(t.confirm("x"));
  CHECK(t.confirmations() == 1);
  CHECK(t.deadline() == milliseconds(3100));
  CHECK(t.confirm("y"));
  CHECK(t.confirm("z"));
  CHECK(t.deadline() == milliseconds(1100));
  CHECK_FALSE(t.confirm("w"));  // beyond k: cannot shorten further
}

TEST_CASE("a postponed suspicion keeps its confirmations and moves its deadline") {
  SuspicionTimer t(milliseconds(0), SuspicionBounds{milliseconds(1000), milliseconds(5000), 3}, "a");
  t.confirm("b");
  t.postpone(milliseconds(1500));
  CHECK(t.deadline() == milliseconds(4500));
}

TEST_CASE("local health moves by Lifeguard's deltas within 0..max and stretches durations") {
  LocalHealth h(8);
  CHECK(h.score() == 0);
  h.apply(LocalHealth::kProbeSucceeded);
  CHECK(h.score() == 0);
  h.apply(LocalHealth::kProbeFailed);
  h.apply(LocalHealth::kMissedNack);
  CHECK(h.score() == 2);
  CHECK(h.scale(milliseconds(200)) == milliseconds(600));
  for (int i = 0; i < 20; ++i) h.apply(LocalHealth::kRefuted);
  CHECK(h.score() == 8);
  CHECK(h.scale(milliseconds(200)) == milliseconds(1800));
  h.apply(LocalHealth::kProbeSucceeded);
  CHECK(h.score() == 7);
}

// Lifeguard's suspicion timeout arithmetic, confirmations, and the local health multiplier.
#include "gossip/suspicion.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <vector>

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

namespace {
// min 1 s, max 5 s, k 3; the refusal rule: 20 ms once refused here and by 2 others.
SuspicionBounds refusal_bounds(uint32_t refused_k = 2) {
  SuspicionBounds b{milliseconds(1000), milliseconds(5000), 3};
  b.refused_min = milliseconds(20);
  b.refused_k = refused_k;
  return b;
}
}  // namespace

TEST_CASE("the refusal rule needs this member's own refusal and refused_k others, table") {
  struct Row {
    bool mine;
    std::vector<std::string> others;
    bool answered;
    uint32_t refused_k;
    bool fast;
  };
  const std::vector<Row> rows = {
      {false, {}, false, 2, false},              // nothing
      {true, {}, false, 2, false},               // a refusal alone never suffices
      {true, {"x"}, false, 2, false},            // one of two others
      {true, {"x", "y"}, false, 2, true},        // the rule holds
      {true, {"x", "x"}, false, 2, false},       // one confirmer counted once
      {false, {"x", "y", "z"}, false, 2, false},  // others' word without our own
      {true, {"x", "y"}, true, 2, false},        // the suspect answered a probe: void
      {true, {"x", "y"}, false, 0, false},       // the rule is off (too few members)
      {true, {"accuser"}, false, 1, true},       // the accuser's refusal counts as another member's
  };
  for (const Row& r : rows) {
    SuspicionTimer t(milliseconds(100), refusal_bounds(r.refused_k), "accuser");
    if (r.mine) CHECK(t.saw_refusal());
    for (const auto& o : r.others) t.confirm_refusal(o);
    if (r.answered) t.answered();
    CAPTURE(r.others.size());
    CAPTURE(r.mine);
    CHECK(t.refusal_confirmed() == r.fast);
    CHECK(t.deadline() == (r.fast ? milliseconds(120) : milliseconds(5100)));
  }
}

TEST_CASE("the refusal rule never lengthens a timer, and counts bounded confirmers") {
  SuspicionTimer t(milliseconds(0), refusal_bounds(), "a");
  for (const char* who : {"b", "c", "d"}) t.confirm(who);  // normal deadline: min
  CHECK(t.deadline() == milliseconds(1000));
  CHECK(t.saw_refusal());
  CHECK_FALSE(t.saw_refusal());
  for (int i = 0; i < 20; ++i) t.confirm_refusal("m" + std::to_string(i));
  CHECK(t.refusals() == SuspicionTimer::kMaxRefusers);
  CHECK(t.deadline() == milliseconds(20));
  t.postpone(milliseconds(500));  // a pause of this member moves it like the normal one
  CHECK(t.deadline() == milliseconds(520));
}

TEST_CASE("refusal confirmations needed: min(wanted, n - 2), none below 3 members") {
  CHECK(refusal_confirmations_needed(2, 2) == 0);
  CHECK(refusal_confirmations_needed(2, 3) == 1);
  CHECK(refusal_confirmations_needed(2, 8) == 2);
  CHECK(refusal_confirmations_needed(0, 8) == 0);
}

// DrainRule::decide: nobody drains, some ranks drain (the others wait for the view), every rank drains; no
// rank's word is refused.
#include "shoal/drain_rule.hpp"

#include <doctest/doctest.h>

#include "shoal/errors.hpp"

using shoal::DrainDecision;
using shoal::DrainRule;

TEST_CASE("the drain decision: none, some and every rank of the world draining") {
  struct Row {
    std::vector<bool> draining;
    DrainDecision want;
  };
  const std::vector<Row> table = {
      {{false}, {0, false, false}},
      {{true}, {1, true, true}},
      {{false, false, false, false}, {0, false, false}},
      {{false, false, true, false}, {1, true, false}},          // one host of four drains
      {{false, false, true, true}, {2, true, false}},           // a host of two slots
      {{true, true, true, true}, {4, true, true}},              // every host: nobody waits for a view
  };
  for (const auto& row : table) {
    CAPTURE(row.draining.size());
    CHECK(DrainRule::decide(row.draining) == row.want);
  }
}

TEST_CASE("the drain decision needs a rank's word") { CHECK_THROWS_AS(DrainRule::decide({}), shoal::Error); }

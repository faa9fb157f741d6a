// plan_rebuild: shrink only for leaves with survivors in their old order and a handle left to shrink;
// everything else is a fresh init. One table of view changes, each with the plan it must give.
#include "comm_wrap/rebuild_plan.hpp"

#include <doctest/doctest.h>

#include <string>
#include <variant>
#include <vector>

#include "../ranks/view_builders.hpp"
#include "ranks/rank_table.hpp"

using shoal::comm::FreshInit;
using shoal::comm::OldCommunicatorState;
using shoal::comm::plan_rebuild;
using shoal::comm::Shrink;
using shoal::membership::ViewMember;
using shoal::ranks::RankTable;
using shoal::testing::member;
using shoal::testing::view;

namespace {

// Ranks: a = 0,1; b = 2,3; c = 4,5.
const ViewMember kA = member("a", "ha", 2, 1);
const ViewMember kB = member("b", "hb", 2, 2);
const ViewMember kC = member("c", "hc", 2, 3);
const ViewMember kD = member("d", "hd", 2, 6);  // joins later
const ViewMember kWitness = member("w", "hw", 0, 6);

ViewMember restarted(ViewMember m) {
  m.generation += 1;
  return m;
}
ViewMember with_slots(ViewMember m, uint32_t slots) {
  m.slots = slots;
  return m;
}

const OldCommunicatorState kHealthy{};
const OldCommunicatorState kAborted{.aborted = true};
const OldCommunicatorState kInFlight{.in_flight = true};
const OldCommunicatorState kReleased{.released = true};
const OldCommunicatorState kNone{.exists = false};

struct Row {
  const char* change;
  std::vector<ViewMember> after;
  OldCommunicatorState old;
  bool shrink;
  std::vector<int> excluded;  // when shrink
  bool abort_in_flight;       // when shrink
};

}  // namespace

TEST_CASE("the rebuild plan shrinks exactly for leaves with a shrinkable handle, and fresh-inits otherwise") {
  const RankTable before(view(5, {kA, kB, kC}));
  const std::vector<Row> rows = {
      {"b leaves", {kA, kC}, kHealthy, true, {2, 3}, false},
      {"b leaves after an abort", {kA, kC}, kAborted, true, {2, 3}, true},
      {"b leaves with a collective in flight", {kA, kC}, kInFlight, true, {2, 3}, true},
      {"a leaves: the others move down", {kB, kC}, kHealthy, true, {0, 1}, false},
      {"a and c leave", {kB}, kHealthy, true, {0, 1, 4, 5}, false},
      {"c loses a slot", {kA, kB, with_slots(kC, 1)}, kHealthy, true, {5}, false},
      // NCCL refuses a shrink that excludes nobody (seen on an H100/H200): the same ranks init afresh.
      {"only a witness joins: same ranks", {kA, kB, kC, kWitness}, kHealthy, false, {}, false},
      {"the same world rebuilt after an abort", {kA, kB, kC}, kAborted, false, {}, false},
      {"d joins", {kA, kB, kC, kD}, kHealthy, false, {}, false},
      {"b leaves and d joins", {kA, kC, kD}, kAborted, false, {}, false},
      {"b restarted: a new process", {kA, restarted(kB), kC}, kAborted, false, {}, false},
      {"c gains a slot", {kA, kB, with_slots(kC, 3)}, kHealthy, false, {}, false},
      {"b leaves but the handle was released", {kA, kC}, kReleased, false, {}, false},
      {"b leaves but this rank had no communicator", {kA, kC}, kNone, false, {}, false},
      {"every ranked member leaves", {kWitness}, kHealthy, false, {}, false},
  };
  for (const Row& row : rows) {
    CAPTURE(row.change);
    const RankTable after(view(6, row.after));
    const auto plan = plan_rebuild(before, after, row.old);
    if (row.shrink) {
      REQUIRE(std::holds_alternative<Shrink>(plan));
      CHECK(std::get<Shrink>(plan).excluded_old_ranks == row.excluded);
      CHECK(std::get<Shrink>(plan).abort_in_flight == row.abort_in_flight);
    } else {
      REQUIRE(std::holds_alternative<FreshInit>(plan));
      CHECK_FALSE(std::get<FreshInit>(plan).reason.empty());
    }
  }
}

TEST_CASE("a fresh init after a join says that ranks joined") {
  const RankTable before(view(5, {kA, kB}));
  const RankTable after(view(6, {kA, kB, kD}));
  const auto plan = plan_rebuild(before, after, kHealthy);
  REQUIRE(std::holds_alternative<FreshInit>(plan));
  CHECK(std::get<FreshInit>(plan).reason.find("joined") != std::string::npos);
}

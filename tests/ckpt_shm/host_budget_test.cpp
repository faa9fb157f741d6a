// The host budget's eviction policy, as tables: what is dropped, in which order, and when a save is
// refused.
#include "ckpt_shm/host_budget.hpp"

#include <doctest/doctest.h>

#include <vector>

using namespace shoal::ckpt;

namespace {

HeldVersion sealed(uint32_t rank, uint64_t step, uint64_t bytes, uint64_t sequence = 0) {
  return HeldVersion{"j", rank, step, sequence == 0 ? step : sequence, bytes, true};
}
HeldVersion torn(uint32_t rank, uint64_t bytes) { return HeldVersion{"j", rank, 0, 0, bytes, false}; }

std::vector<size_t> drops(const std::vector<HeldVersion>& held, uint64_t incoming, uint64_t budget) {
  auto plan = plan_eviction(held, IncomingSave{"j", 0, incoming}, budget);
  REQUIRE(plan.ok());
  CHECK(plan->bytes_after_save <= budget);
  return plan->drop;
}

}  // namespace

TEST_CASE("eviction tables: what is dropped for a new save") {
  struct Row {
    const char* scenario;
    std::vector<HeldVersion> held;
    uint64_t incoming;
    uint64_t budget;
    std::vector<size_t> expected;
  };
  const std::vector<Row> rows = {
      {"everything fits: nothing dropped", {sealed(0, 1, 100), sealed(1, 1, 100)}, 100, 300, {}},
      {"exactly at the budget: nothing dropped", {sealed(0, 1, 100), sealed(0, 2, 100)}, 100, 300, {}},
      {"the older version of a rank goes, its newest stays", {sealed(0, 1, 100), sealed(0, 2, 100)}, 100, 250, {0}},
      {"unsealed versions go before any sealed one",
       {sealed(0, 1, 100), sealed(0, 2, 100), torn(1, 50), sealed(1, 2, 100)},
       100,
       400,
       {2}},
      {"the largest unsealed version goes first", {torn(0, 10), torn(1, 90), sealed(1, 2, 100)}, 100, 210, {1}},
      {"older sealed versions go lowest step first, across ranks",
       {sealed(0, 5, 100), sealed(0, 6, 100), sealed(1, 3, 100), sealed(1, 6, 100)},
       100,
       400,
       {2}},
      {"as many as needed, oldest first",
       {sealed(0, 5, 100), sealed(0, 6, 100), sealed(1, 3, 100), sealed(1, 6, 100), torn(2, 100)},
       100,
       300,
       {4, 2, 0}},
      {"a rank with only unsealed versions loses them all",
       {torn(0, 100), torn(0, 100), sealed(1, 1, 100)},
       100,
       200,
       {0, 1}},
  };
  for (const auto& row : rows) {
    CAPTURE(row.scenario);
    CHECK(drops(row.held, row.incoming, row.budget) == row.expected);
  }
}

TEST_CASE(
    "the newest version of a rank is chosen by commit sequence, so a rank that rolled back keeps its latest save") {
  // Step 100 was saved first (sequence 1); after a restore to step 90 the rank saved step 91 (sequence 2).
  const std::vector<HeldVersion> held = {sealed(0, 100, 100, 1), sealed(0, 91, 100, 2)};
  CHECK(drops(held, 100, 200) == std::vector<size_t>{0});
}

TEST_CASE("the same rank of two jobs are two ranks, each keeping its newest version") {
  const std::vector<HeldVersion> held = {{"a", 0, 1, 1, 100, true}, {"b", 0, 1, 1, 100, true}};
  auto plan = plan_eviction(held, IncomingSave{"a", 0, 100}, 300);
  REQUIRE(plan.ok());
  CHECK(plan->drop.empty());
  CHECK_FALSE(plan_eviction(held, IncomingSave{"a", 0, 100}, 299).ok());
}

TEST_CASE("a save that cannot fit beside every rank's newest version is refused, naming the budget and the need") {
  const std::vector<HeldVersion> held = {sealed(0, 1, 100), sealed(0, 2, 400), sealed(1, 2, 400)};
  auto plan = plan_eviction(held, IncomingSave{"j", 0, 300}, 1000);
  REQUIRE_FALSE(plan.ok());
  const auto& msg = plan.error().message;
  CHECK(msg.find("budget of 1000 bytes") != std::string::npos);
  CHECK(msg.find("needs 300 bytes") != std::string::npos);
  CHECK(msg.find("1100 bytes") != std::string::npos);
  // A new save larger than the whole budget is refused even on an empty host.
  CHECK_FALSE(plan_eviction({}, IncomingSave{"j", 0, 1001}, 1000).ok());
}

TEST_CASE("sizes near 2^64 never wrap around into fitting") {
  const std::vector<HeldVersion> held = {sealed(0, 1, UINT64_MAX - 10), sealed(0, 2, 100)};
  auto plan = plan_eviction(held, IncomingSave{"j", 0, 100}, 300);
  REQUIRE(plan.ok());
  CHECK(plan->drop == std::vector<size_t>{0});
  CHECK(plan->bytes_after_save == 200);
  CHECK_FALSE(
      plan_eviction(std::vector<HeldVersion>{sealed(0, 2, UINT64_MAX - 10)}, IncomingSave{"j", 0, 100}, 300).ok());
}

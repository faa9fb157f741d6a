// A restore planned once for every rank: one report per host, each rank's part (step, saved rank, its
// holders once each, best first, with the bytes promised), refusals every rank throws, and plans that
// name holders outside the view.
#include "ckpt_shm/restore_plan.hpp"

#include <doctest/doctest.h>

#include <optional>
#include <vector>

using namespace shoal::ckpt;

namespace {

const ExpectedHolder kA{"a", "10.0.0.1:7946"};
const ExpectedHolder kB{"b", "10.0.0.2:7946"};
const ExpectedHolder kC{"c", "10.0.0.3:7946"};

// Ranks 0 and 1 on host a, ranks 2 and 3 on host b (world 4, step 7, 1000 bytes each); a keeps b's
// ranks as replicas and b keeps a's.
std::vector<HeldCheckpoint> held_on_a() {
  return {{0, 7, 4, 1000, true}, {1, 7, 4, 1000, true}, {2, 7, 4, 1000, false}, {3, 7, 4, 1000, false}};
}
std::vector<HeldCheckpoint> held_on_b() {
  return {{2, 7, 4, 1000, true}, {3, 7, 4, 1000, true}, {0, 7, 4, 1000, false}, {1, 7, 4, 1000, false}};
}
std::vector<HolderReport> two_hosts() {
  const HolderReport a{kA.holder, kA.address, held_on_a()};
  const HolderReport b{kB.holder, kB.address, held_on_b()};
  return {a, a, b, b};
}

}  // namespace

TEST_CASE("one report per host: each rank shares the report of the lowest rank on its member and address") {
  struct Row {
    const char* what;
    std::vector<ExpectedHolder> view;
    std::vector<uint32_t> writers;
  };
  const std::vector<Row> rows = {
      {"one rank per host", {kA, kB, kC}, {0, 1, 2}},
      {"two hosts of two ranks", {kA, kA, kB, kB}, {0, 0, 2, 2}},
      {"ranks of a host not adjacent", {kA, kB, kA, kC, kB}, {0, 1, 0, 3, 1}},
      {"one name at two addresses is two hosts", {kA, {"a", "10.0.0.9:7946"}}, {0, 1}},
      {"no ranks", {}, {}},
  };
  for (const auto& row : rows) {
    CAPTURE(row.what);
    CHECK(report_writers(row.view) == row.writers);
  }
}

TEST_CASE("each rank's part: its own host's copy first, the replica's host next, each holder once") {
  const auto plan = plan_restore(two_hosts(), {});
  REQUIRE(plan.kind == RestorePlan::Kind::plans);
  REQUIRE(plan.ranks.size() == 4);
  for (uint32_t r = 0; r < 4; ++r) {
    CAPTURE(r);
    const auto& p = plan.ranks[r];
    CHECK(p.step == 7);
    CHECK(p.world == 4);
    CHECK(p.source == r);
    const PlanHolder own = r < 2 ? PlanHolder{"a", kA.address, 1000} : PlanHolder{"b", kB.address, 1000};
    const PlanHolder other = r < 2 ? PlanHolder{"b", kB.address, 1000} : PlanHolder{"a", kA.address, 1000};
    // The reports repeat each host for each of its ranks; the plan names each host once.
    CHECK(p.holders == std::vector<PlanHolder>{own, other});
  }
}

TEST_CASE("a host gone: its ranks' parts name the survivor's replicas; the bytes are the origin's own claim") {
  auto reports = two_hosts();
  // Host b lost: the new view is host a twice (world 2): new ranks 0 and 1 restore their own saved ranks.
  std::vector<HolderReport> survivors = {reports[0], reports[1]};
  // A replica claiming more bytes than the origin's own copy: the origin's claim bounds the fetch.
  survivors[0].held[2].bytes = 5000;
  survivors[1].held[2].bytes = 5000;
  const auto plan = plan_restore(survivors, {});
  REQUIRE(plan.kind == RestorePlan::Kind::plans);
  CHECK(plan.ranks[0].source == 0);
  CHECK(plan.ranks[1].source == 1);
  CHECK(plan.ranks[0].holders == std::vector<PlanHolder>{{"a", kA.address, 1000}});
  // With every rank asking for a saved rank of b: the replica on a, bounded by what a promised (no own copy).
  const std::vector<std::optional<uint32_t>> wanted = {2, 3};
  const auto by_rank = plan_restore(survivors, wanted);
  REQUIRE(by_rank.kind == RestorePlan::Kind::plans);
  CHECK(by_rank.ranks[0].source == 2);
  CHECK(by_rank.ranks[0].holders == std::vector<PlanHolder>{{"a", kA.address, 5000}});
  CHECK(by_rank.ranks[1].source == 3);
}

TEST_CASE("refusals and no step: every rank gets the same answer") {
  struct Row {
    const char* what;
    std::vector<HolderReport> reports;
    std::vector<std::optional<uint32_t>> wanted;
    uint64_t at_most;
    RestorePlan::Kind kind;
    const char* error_has;
  };
  const std::vector<Row> rows = {
      {"nothing held", {{"a", kA.address, {}}, {"b", kB.address, {}}}, {}, UINT64_MAX, RestorePlan::Kind::none, ""},
      {"every step newer than the bound", two_hosts(), {}, 6, RestorePlan::Kind::none, ""},
      {"a saved rank the step's world lacks",
       two_hosts(),
       {0, 1, 2, 9},
       UINT64_MAX,
       RestorePlan::Kind::refused,
       "rank 3 asked for saved rank 9, which did not exist at step 7 (world 4)"},
      {"one rank names none while others do",
       two_hosts(),
       {0, std::nullopt, 2, 3},
       UINT64_MAX,
       RestorePlan::Kind::refused,
       "rank 1 named no saved rank"},
      {"fewer saved ranks than ranks",
       two_hosts(),
       {0, 1},
       UINT64_MAX,
       RestorePlan::Kind::refused,
       "2 saved ranks asked for by 4 ranks"},
  };
  for (const auto& row : rows) {
    CAPTURE(row.what);
    const auto plan = plan_restore(row.reports, row.wanted, row.at_most);
    CHECK(plan.kind == row.kind);
    CHECK(plan.error.find(row.error_has) != std::string::npos);
    if (row.kind != RestorePlan::Kind::plans) CHECK(plan.ranks.empty());
  }
}

TEST_CASE("a dropped (foreign) report names no holder; a plan naming a holder outside the view is caught") {
  auto reports = two_hosts();
  const std::vector<ExpectedHolder> view = {kA, kA, kB, kB};
  // Rank 2's report rewritten to point at a forger's server: dropped, so only host a holds b's ranks.
  reports[2].address = "10.6.6.6:7946";
  reports[3].address = "10.6.6.6:7946";
  CHECK(drop_foreign_reports(reports, view) == std::vector<uint32_t>{2, 3});
  const auto plan = plan_restore(reports, {});
  REQUIRE(plan.kind == RestorePlan::Kind::plans);
  for (const auto& p : plan.ranks) {
    CHECK_FALSE(foreign_plan_holder(p, view));
    for (const auto& h : p.holders) CHECK(h.address != "10.6.6.6:7946");
  }
  RankPlan forged{7, 4, 0, {{"a", kA.address, 1000}, {"a", "10.6.6.6:7946", 1 << 30}}};
  CHECK(foreign_plan_holder(forged, view) == std::optional<std::string>("a at 10.6.6.6:7946"));
  forged.holders = {{"mallory", kB.address, 1000}};
  CHECK(foreign_plan_holder(forged, view) == std::optional<std::string>("mallory at 10.0.0.2:7946"));
}

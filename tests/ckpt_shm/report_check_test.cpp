// The holder reports a restore believes: a report counts only for the member the view gives its rank, at
// that member's address (a key holder that overwrites another rank's report to steer restores to its own
// server is ignored), and a fetched version may be only as large as the reports promised.
#include <doctest/doctest.h>

#include <vector>

#include "ckpt_shm/report_check.hpp"
#include "ckpt_shm/restore_choice.hpp"

using namespace shoal::ckpt;

namespace {

// Ranks 0 and 1 on host a, rank 2 on host b; each saved step 7 (1000 bytes), each host keeps the other's.
std::vector<HolderReport> honest() {
  const std::vector<HeldCheckpoint> on_a = {{0, 7, 3, 1000, true}, {1, 7, 3, 1000, true}, {2, 7, 3, 1000, false}};
  const std::vector<HeldCheckpoint> on_b = {{2, 7, 3, 1000, true}, {0, 7, 3, 1000, false}, {1, 7, 3, 1000, false}};
  return {{"a", "10.0.0.1:7946", on_a}, {"a", "10.0.0.1:7946", on_a}, {"b", "10.0.0.2:7946", on_b}};
}

const std::vector<ExpectedHolder> kView = {{"a", "10.0.0.1:7946"}, {"a", "10.0.0.1:7946"}, {"b", "10.0.0.2:7946"}};

}  // namespace

TEST_CASE("reports written by the view's own members are kept as they are") {
  auto reports = honest();
  CHECK(drop_foreign_reports(reports, kView).empty());
  CHECK(reports.size() == 3);
  CHECK(reports[2].held.size() == 3);
}

TEST_CASE("a report of another rank, rewritten to steer restores to a forger's server, is ignored") {
  struct Row {
    const char* what;
    HolderReport forged;
  };
  // Rank 2's report overwritten: claims a newer local step of every rank, at an address of the forger's.
  const std::vector<HeldCheckpoint> claims = {{0, 99, 3, 1 << 30, true}, {1, 99, 3, 1 << 30, true}, {2, 99, 3, 1 << 30, true}};
  const std::vector<Row> rows = {
      {"another holder's name", {"evil", "10.6.6.6:7946", claims}},
      {"the right name, another address", {"b", "10.6.6.6:7946", claims}},
      {"another member's name and address", {"a", "10.0.0.1:7946", claims}},
  };
  for (const auto& row : rows) {
    CAPTURE(row.what);
    auto reports = honest();
    reports[2] = row.forged;
    const auto dropped = drop_foreign_reports(reports, kView);
    REQUIRE(dropped == std::vector<uint32_t>{2});
    CHECK(reports[2].held.empty());
    CHECK(reports[2].address.empty());
    CHECK(reports[2].holder == "b");
    // The forged steps are gone; the real step 7 is still complete from the others' copies.
    const auto choice = choose_restore(reports);
    REQUIRE(choice);
    CHECK(choice->step == 7);
    for (const auto& holders : choice->holders) {
      for (size_t h : holders) CHECK(reports[h].address == "10.0.0.1:7946");
    }
  }
}

TEST_CASE("reports beyond the view's ranks are ignored") {
  auto reports = honest();
  reports.push_back({"c", "10.0.0.3:7946", {{0, 50, 1, 10, true}}});
  CHECK(drop_foreign_reports(reports, kView) == std::vector<uint32_t>{3});
  CHECK(reports[3].held.empty());
}

TEST_CASE("a fetch may be as large as the rank's own host reported it, else as its holder did") {
  auto reports = honest();
  CHECK(promised_bytes(reports, 2, 7, 0) == 1000);  // b's own report says 1000, whichever holder is asked
  reports[2].held.clear();                           // b is gone: a's replica report is the word
  reports[0].held[2].bytes = 1234;
  reports[1].held[2].bytes = 1234;
  CHECK(promised_bytes(reports, 2, 7, 0) == 1234);
  CHECK(promised_bytes(reports, 2, 8, 0) == 0);  // nobody holds step 8: nothing is accepted
  CHECK(promised_bytes(reports, 2, 7, 9) == 0);  // no such holder
  // Two own copies claimed for one rank (a forger's among them): the smaller is the bound.
  reports[2] = {"b", "10.0.0.2:7946", {{0, 7, 3, 1 << 20, true}}};
  CHECK(promised_bytes(reports, 0, 7, 2) == 1000);
}

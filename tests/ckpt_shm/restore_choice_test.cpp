// choose_restore and source_rank_for as tables: complete and incomplete steps, world disagreements,
// the at_most_step bound, holder order, and the same answer whatever order the reports come in.
#include "ckpt_shm/restore_choice.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

using namespace shoal::ckpt;

namespace {

HeldCheckpoint local(uint32_t rank, uint64_t step, uint32_t world) { return {rank, step, world, 1000, true}; }
HeldCheckpoint replica(uint32_t rank, uint64_t step, uint32_t world) { return {rank, step, world, 1000, false}; }

HolderReport report(std::string holder, std::vector<HeldCheckpoint> held) {
  return HolderReport{holder, "10.0.0.1:" + std::to_string(7000 + holder.size()), std::move(held)};
}

// The choice with report indexes replaced by holder names, so that choices over shuffled reports compare.
std::vector<std::vector<std::string>> by_name(const RestoreChoice& c, const std::vector<HolderReport>& reports) {
  std::vector<std::vector<std::string>> out;
  for (const auto& rank : c.holders) {
    std::vector<std::string> names;
    for (size_t i : rank) names.push_back(reports.at(i).holder);
    out.push_back(std::move(names));
  }
  return out;
}

using Names = std::vector<std::vector<std::string>>;

}  // namespace

TEST_CASE("no reports, or no complete step, restores nothing") {
  CHECK_FALSE(choose_restore({}).has_value());
  const std::vector<HolderReport> reports = {report("a", {local(0, 10, 3), replica(1, 10, 3)}),
                                             report("b", {local(1, 10, 3)}), report("c", {})};
  CHECK_FALSE(choose_restore(reports).has_value());  // rank 2 of step 10 is held nowhere
}

TEST_CASE("the newest complete step wins over a newer incomplete one") {
  // Two hosts, two ranks each host, replicas of the other host's ranks. Host b died mid-save of 30:
  // only a's ranks reached 30.
  const std::vector<HolderReport> reports = {
      report("a", {local(0, 20, 4), local(1, 20, 4), local(0, 30, 4), local(1, 30, 4), replica(2, 20, 4),
                   replica(3, 20, 4)}),
      report("b", {local(2, 20, 4), local(3, 20, 4), replica(0, 20, 4), replica(1, 20, 4), replica(0, 30, 4)}),
  };
  auto c = choose_restore(reports);
  REQUIRE(c.has_value());
  CHECK(c->step == 20);
  CHECK(c->world == 4);
  CHECK(by_name(*c, reports) == Names{{"a", "b"}, {"a", "b"}, {"b", "a"}, {"b", "a"}});
}

TEST_CASE("a step held only as replicas is complete too, and locals go before replicas") {
  const std::vector<HolderReport> reports = {
      report("z", {replica(0, 5, 2), local(1, 5, 2)}),
      report("m", {replica(0, 5, 2), replica(1, 5, 2)}),
      report("a", {replica(0, 5, 2), replica(1, 5, 2)}),
  };
  auto c = choose_restore(reports);
  REQUIRE(c.has_value());
  CHECK(c->step == 5);
  CHECK(by_name(*c, reports) == Names{{"a", "m", "z"}, {"z", "a", "m"}});
}

TEST_CASE("a report holding a rank both locally and as a replica counts once, as local") {
  const std::vector<HolderReport> reports = {report("b", {replica(0, 1, 1), local(0, 1, 1), replica(0, 1, 1)}),
                                             report("a", {replica(0, 1, 1)})};
  auto c = choose_restore(reports);
  REQUIRE(c.has_value());
  CHECK(by_name(*c, reports) == Names{{"b", "a"}});
}

TEST_CASE("entries that disagree with the step's majority world are ignored") {
  SUBCASE("the majority world is complete") {
    const std::vector<HolderReport> reports = {report("a", {local(0, 9, 2), local(1, 9, 2)}),
                                               report("b", {replica(0, 9, 2), local(0, 9, 1)})};
    auto c = choose_restore(reports);
    REQUIRE(c.has_value());
    CHECK(c->world == 2);
    CHECK(by_name(*c, reports) == Names{{"a", "b"}, {"a"}});
  }
  SUBCASE("a complete minority world does not make the step complete") {
    const std::vector<HolderReport> reports = {report("a", {local(0, 9, 3), local(1, 9, 3), local(0, 8, 3)}),
                                               report("b", {local(0, 9, 1), local(1, 8, 3), local(2, 8, 3)})};
    auto c = choose_restore(reports);
    REQUIRE(c.has_value());
    CHECK(c->step == 8);
    CHECK(c->world == 3);
  }
  SUBCASE("a tie goes to the larger world") {
    const std::vector<HolderReport> reports = {report("a", {local(0, 4, 1), local(0, 4, 2), local(1, 4, 2)}),
                                               report("b", {local(0, 4, 1)})};
    auto c = choose_restore(reports);
    REQUIRE(c.has_value());
    CHECK(c->world == 2);
    CHECK(by_name(*c, reports) == Names{{"a"}, {"a"}});
  }
  SUBCASE("entries with world 0 or a rank outside their world are ignored") {
    const std::vector<HolderReport> reports = {
        report("a", {local(0, 7, 0), local(2, 7, 2), local(5, 7, 2), local(5, 7, 2), local(0, 7, 2)})};
    CHECK_FALSE(choose_restore(reports).has_value());
    const std::vector<HolderReport> huge = {report("a", {local(0, 7, 4000000000u)})};
    CHECK_FALSE(choose_restore(huge).has_value());
  }
}

TEST_CASE("at_most_step bounds the choice") {
  const std::vector<HolderReport> reports = {report("a", {local(0, 10, 1), local(0, 20, 1), local(0, 30, 1)})};
  CHECK(choose_restore(reports)->step == 30);
  CHECK(choose_restore(reports, 29)->step == 20);
  CHECK(choose_restore(reports, 20)->step == 20);
  CHECK(choose_restore(reports, 10)->step == 10);
  CHECK_FALSE(choose_restore(reports, 9).has_value());
}

TEST_CASE("the choice names the same holders in the same order whatever order the reports come in") {
  // 6 hosts, world 8, steps 100..103, each rank's versions local on one host and replicated on two
  // others; step 103 misses rank 5 everywhere. Seeded, so a failure replays.
  std::mt19937 random(20261122);
  std::vector<HolderReport> reports;
  for (int h = 0; h < 6; ++h) reports.push_back(report("host-" + std::to_string(h), {}));
  for (uint64_t step = 100; step <= 103; ++step) {
    for (uint32_t rank = 0; rank < 8; ++rank) {
      if (step == 103 && rank == 5) continue;
      const size_t origin = rank % 6;
      reports[origin].held.push_back(local(rank, step, 8));
      reports[(origin + 1) % 6].held.push_back(replica(rank, step, 8));
      reports[(origin + 3) % 6].held.push_back(replica(rank, step, 8));
    }
  }
  const auto expected = choose_restore(reports);
  REQUIRE(expected.has_value());
  CHECK(expected->step == 102);
  const Names expected_names = by_name(*expected, reports);
  CHECK(expected_names[0] == std::vector<std::string>{"host-0", "host-1", "host-3"});
  CHECK(expected_names[7] == std::vector<std::string>{"host-1", "host-2", "host-4"});
  for (int round = 0; round < 50; ++round) {
    auto shuffled = reports;
    std::shuffle(shuffled.begin(), shuffled.end(), random);
    for (auto& r : shuffled) std::shuffle(r.held.begin(), r.held.end(), random);
    const auto c = choose_restore(shuffled);
    REQUIRE(c.has_value());
    CHECK(c->step == expected->step);
    CHECK(c->world == expected->world);
    CHECK(by_name(*c, shuffled) == expected_names);
  }
}

TEST_CASE("a new rank restores its own saved rank where it existed, else new_rank % saved_world") {
  struct Row {
    uint32_t new_rank, new_world, saved_world;
    std::optional<uint32_t> source;
  };
  const std::vector<Row> table = {
      {0, 4, 4, 0},
      {3, 4, 4, 3},  // same world
      {2, 3, 4, 2},  // shrunk: every new rank existed
      {4, 8, 4, 0},
      {5, 8, 4, 1},
      {7, 8, 4, 3},
      {6, 7, 3, 0},             // grown: modulo
      {4, 4, 4, std::nullopt},  // not a rank of the new world
      {0, 1, 0, std::nullopt},  // nothing was saved
  };
  for (const auto& row : table) {
    CAPTURE(row.new_rank);
    CAPTURE(row.new_world);
    CAPTURE(row.saved_world);
    CHECK(source_rank_for(row.new_rank, row.new_world, row.saved_world) == row.source);
  }
}

TEST_CASE("holders_for_new_rank follows the source rank") {
  const std::vector<HolderReport> reports = {report("a", {local(0, 1, 2)}), report("b", {local(1, 1, 2)})};
  const auto c = choose_restore(reports);
  REQUIRE(c.has_value());
  const auto three = holders_for_new_rank(*c, 2, 3);  // new rank 2 restores saved rank 0
  REQUIRE(three.size() == 1);
  CHECK(reports[three[0]].holder == "a");
  CHECK(holders_for_new_rank(*c, 1, 3)[0] == 1);
  CHECK(holders_for_new_rank(*c, 3, 3).empty());
}

// choose_restore_for_world: reports[r] is new rank r's; each report names its host by address.
namespace {

HolderReport on_host(std::string holder, std::string address, std::vector<HeldCheckpoint> held) {
  return HolderReport{std::move(holder), std::move(address), std::move(held)};
}

}  // namespace

TEST_CASE("survivors restore their own hosts' versions, so a dead host's unreplicated step costs nothing") {
  // World of 3 (h0, h1, h2), each replicating to the next. h0 died after every rank saved step 15, but
  // before rank 0's step 15 reached its replica on h1. The survivors h1, h2 are the new ranks 0 and 1.
  const auto h1 = std::vector<HeldCheckpoint>{local(1, 14, 3), local(1, 15, 3), replica(0, 14, 3)};
  const auto h2 = std::vector<HeldCheckpoint>{local(2, 14, 3), local(2, 15, 3), replica(1, 14, 3), replica(1, 15, 3)};
  const std::vector<HolderReport> reports = {on_host("h1", "10.0.0.2:7946", h1), on_host("h2", "10.0.0.3:7946", h2)};
  auto w = choose_restore_for_world(reports);
  REQUIRE(w.has_value());
  CHECK(w->choice.step == 15);
  CHECK(w->choice.world == 3);
  CHECK(w->sources == std::vector<uint32_t>{1, 2});  // each its own host's rank
  CHECK(w->choice.holders[0].empty());                // rank 0 of step 15 is read by no one
  CHECK(w->choice.holders[1] == std::vector<size_t>{0, 1});
  CHECK(w->choice.holders[2] == std::vector<size_t>{1});
  // The old rule needs every saved rank: it goes back to 14.
  REQUIRE(choose_restore(reports).has_value());
  CHECK(choose_restore(reports)->step == 14);
}

TEST_CASE("a new host reads the modulo rank, and the step waits until that rank is held somewhere") {
  // Saved world of 2 (h0, h1). h1 died; a newcomer h9 took its place: new ranks h0 -> 0, h9 -> 1.
  // h0 holds its own rank 0 at 20 and 21, and the replica of rank 1 only at 20.
  const std::vector<HolderReport> reports = {
      on_host("h0", "10.0.0.1:7946", {local(0, 20, 2), local(0, 21, 2), replica(1, 20, 2)}),
      on_host("h9", "10.0.0.9:7946", {}),
  };
  auto w = choose_restore_for_world(reports);
  REQUIRE(w.has_value());
  CHECK(w->choice.step == 20);  // 21: rank 1, which h9 reads, is held nowhere
  CHECK(w->sources == std::vector<uint32_t>{0, 1});
  CHECK(w->choice.holders[1] == std::vector<size_t>{0});
}

TEST_CASE("a host with several new ranks hands its local saved ranks out in order") {
  const auto held = std::vector<HeldCheckpoint>{local(2, 5, 4), local(3, 5, 4), replica(0, 5, 4), replica(1, 5, 4)};
  const std::vector<HolderReport> reports = {on_host("b", "10.0.0.2:7946", held), on_host("b", "10.0.0.2:7946", held)};
  auto w = choose_restore_for_world(reports);
  REQUIRE(w.has_value());
  CHECK(w->choice.step == 5);
  CHECK(w->sources == std::vector<uint32_t>{2, 3});
  CHECK_FALSE(choose_restore_for_world(std::vector<HolderReport>{}).has_value());
}

// Forged replicas: a member that placement sends to can push any version header it likes. Only what the
// view's own ranks saved (local copies) vouches for a step and its world; replicas only fill in ranks.
TEST_CASE("a forged world size in replicas neither picks the world nor makes a step complete") {
  // Step 100 was saved by a world of 2 (a: rank 0, b: rank 1). Three hosts hold a forged "rank 0 of
  // world 1, step 100": by count it would outvote the real world, and it is complete on its own.
  const std::vector<HolderReport> reports = {
      report("a", {local(0, 100, 2), replica(0, 100, 1)}),
      report("b", {local(1, 100, 2), replica(0, 100, 1)}),
      report("c", {replica(0, 100, 1)}),
  };
  auto c = choose_restore(reports);
  REQUIRE(c.has_value());
  CHECK(c->step == 100);
  CHECK(c->world == 2);
  CHECK(by_name(*c, reports) == Names{{"a"}, {"b"}});
  auto w = choose_restore_for_world(reports);
  REQUIRE(w.has_value());
  CHECK(w->choice.world == 2);
  CHECK(w->sources == std::vector<uint32_t>{0, 1, 0});
}

TEST_CASE("forged ranks outside the world the view saved are ignored") {
  // The view's ranks saved step 50 in a world of 2; c holds a whole forged world of 6 for step 50 and
  // of 8 for step 60, every rank of it as a replica.
  std::vector<HeldCheckpoint> forged;
  for (uint32_t r = 0; r < 6; ++r) forged.push_back(replica(r, 50, 6));
  for (uint32_t r = 0; r < 8; ++r) forged.push_back(replica(r, 60, 8));
  const std::vector<HolderReport> reports = {report("a", {local(0, 50, 2)}), report("b", {local(1, 50, 2)}),
                                             report("c", forged)};
  auto c = choose_restore(reports);
  REQUIRE(c.has_value());
  CHECK(c->step == 50);
  CHECK(c->world == 2);
  CHECK(c->holders.size() == 2);
  auto w = choose_restore_for_world(reports);
  REQUIRE(w.has_value());
  CHECK(w->choice.step == 50);
  CHECK(w->choice.world == 2);
  CHECK(w->sources == std::vector<uint32_t>{0, 1, 0});
}

TEST_CASE("a forged huge step held by one host while no rank saved it leaves the real steps chosen") {
  constexpr uint64_t kHuge = 1'000'000'000;
  SUBCASE("the forger's world is complete in replicas") {
    const std::vector<HolderReport> reports = {
        report("a", {local(0, 10, 3), local(0, 20, 3)}),
        report("b", {local(1, 10, 3), local(1, 20, 3)}),
        report("c", {local(2, 10, 3), local(2, 20, 3), replica(0, kHuge, 1), replica(0, kHuge + 1, 3),
                     replica(1, kHuge + 1, 3), replica(2, kHuge + 1, 3)}),
    };
    auto c = choose_restore(reports);
    REQUIRE(c.has_value());
    CHECK(c->step == 20);
    CHECK(by_name(*c, reports) == Names{{"a"}, {"b"}, {"c"}});
    auto w = choose_restore_for_world(reports);
    REQUIRE(w.has_value());
    CHECK(w->choice.step == 20);
    CHECK(w->sources == std::vector<uint32_t>{0, 1, 2});
  }
  SUBCASE("a dead host's real replica is still used, however many newer forged steps sit beside it") {
    // b died after step 20; a holds its own rank 0 and b's rank 1 as a replica, and two forged newer
    // steps of rank 1 that would have counted as superseding it.
    const std::vector<HolderReport> reports = {
        report("a", {local(0, 20, 2), replica(1, 20, 2), replica(1, kHuge, 2), replica(1, kHuge + 1, 2),
                     replica(0, kHuge, 2), replica(0, kHuge + 1, 2)}),
        report("n", {}),
    };
    auto c = choose_restore(reports);
    REQUIRE(c.has_value());
    CHECK(c->step == 20);
    CHECK(by_name(*c, reports) == Names{{"a"}, {"a"}});
    auto w = choose_restore_for_world(reports);
    REQUIRE(w.has_value());
    CHECK(w->choice.step == 20);
    CHECK(w->sources == std::vector<uint32_t>{0, 1});
  }
  SUBCASE("a step held only as replicas is not restored while any report holds a local copy") {
    const std::vector<HolderReport> reports = {report("a", {replica(0, 7, 1), local(0, 3, 2)}),
                                               report("b", {replica(0, 7, 1), replica(1, 3, 2)})};
    CHECK(choose_restore(reports)->step == 3);
    CHECK(choose_restore_for_world(reports)->choice.step == 3);
  }
  SUBCASE("with no local copy anywhere (every host's memory lost, versions reloaded from disk) replicas vote") {
    const std::vector<HolderReport> reports = {report("a", {replica(0, 7, 2)}), report("b", {replica(1, 7, 2)})};
    CHECK(choose_restore(reports)->step == 7);
    CHECK(choose_restore_for_world(reports)->choice.step == 7);
  }
}

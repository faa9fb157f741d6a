// survivor_ranks: the old->new renumbering between two tables, that a leaves-only change is exactly
// the compaction ncclCommShrink applies, and what does not count as a survivor.
#include <doctest/doctest.h>

#include <algorithm>
#include <optional>
#include <random>
#include <set>

#include "ranks/rank_table.hpp"
#include "view_builders.hpp"

using shoal::membership::ViewMember;
using shoal::ranks::RankTable;
using shoal::ranks::survivor_ranks;
using shoal::testing::member;
using shoal::testing::random_members;
using shoal::testing::RandomViewShape;
using shoal::testing::view;

namespace {

constexpr std::nullopt_t gone = std::nullopt;
using RankMap = std::vector<std::optional<uint32_t>>;

const std::vector<ViewMember> kThree = {member("a", "ha", 2, 0), member("b", "hb", 3, 0), member("c", "hc", 1, 1)};

}  // namespace

TEST_CASE("a leave maps the survivors onto their compacted ranks and lists the departed ranks") {
  const RankTable before(view(1, kThree));
  const RankTable after(view(2, {kThree[0], kThree[2]}));
  const auto map = survivor_ranks(before, after);
  CHECK(map.new_rank_of_old == RankMap{0, 1, gone, gone, gone, 2});
  CHECK(map.removed_old_ranks == std::vector<uint32_t>{2, 3, 4});
  CHECK(map.added_new_ranks.empty());
  CHECK(map.leaves_only());
}

TEST_CASE("an unchanged member list maps every rank onto itself and is trivially leaves only") {
  const RankTable before(view(1, kThree));
  const RankTable after(view(2, kThree));
  const auto map = survivor_ranks(before, after);
  CHECK(map.new_rank_of_old == RankMap{0, 1, 2, 3, 4, 5});
  CHECK(map.removed_old_ranks.empty());
  CHECK(map.leaves_only());
}

TEST_CASE("a join is not leaves only, and every old rank survives unchanged") {
  const RankTable before(view(1, kThree));
  const RankTable after(view(2, {kThree[0], kThree[1], kThree[2], member("d", "hd", 2, 2)}));
  const auto map = survivor_ranks(before, after);
  CHECK(map.new_rank_of_old == RankMap{0, 1, 2, 3, 4, 5});
  CHECK(map.added_new_ranks == std::vector<uint32_t>{6, 7});
  CHECK_FALSE(map.leaves_only());
}

TEST_CASE("a join and a leave in one view keep the survivors compacted but cannot be a shrink") {
  const RankTable before(view(1, kThree));
  const RankTable after(view(2, {kThree[1], kThree[2], member("d", "hd", 1, 2)}));
  const auto map = survivor_ranks(before, after);
  CHECK(map.new_rank_of_old == RankMap{gone, gone, 0, 1, 2, 3});
  CHECK(map.removed_old_ranks == std::vector<uint32_t>{0, 1});
  CHECK(map.added_new_ranks == std::vector<uint32_t>{4});
  CHECK_FALSE(map.leaves_only());
}

TEST_CASE("a readmitted member (a new join epoch) is a new process, not a survivor") {
  const RankTable before(view(1, kThree));
  ViewMember b_again = kThree[1];
  b_again.join_epoch = 2;
  const RankTable after(view(2, {kThree[0], b_again, kThree[2]}));
  const auto map = survivor_ranks(before, after);
  CHECK(map.new_rank_of_old == RankMap{0, 1, gone, gone, gone, 2});
  CHECK(map.added_new_ranks == std::vector<uint32_t>{3, 4, 5});
  CHECK_FALSE(map.leaves_only());
}

TEST_CASE("a restarted member (a new generation) is a new process, not a survivor") {
  const RankTable before(view(1, kThree));
  ViewMember a_restarted = kThree[0];
  a_restarted.generation = 1;
  const auto map = survivor_ranks(before, RankTable(view(2, {a_restarted, kThree[1], kThree[2]})));
  CHECK(map.new_rank_of_old == RankMap{gone, gone, 2, 3, 4, 5});
  CHECK(map.removed_old_ranks == std::vector<uint32_t>{0, 1});
  CHECK(map.added_new_ranks == std::vector<uint32_t>{0, 1});
  CHECK_FALSE(map.leaves_only());
}

TEST_CASE("a member whose address changed is not a survivor") {
  const RankTable before(view(1, kThree));
  ViewMember c_moved = kThree[2];
  c_moved.addr = "hc:9000";
  const auto map = survivor_ranks(before, RankTable(view(2, {kThree[0], kThree[1], c_moved})));
  CHECK(map.new_rank_of_old == RankMap{0, 1, 2, 3, 4, gone});
  CHECK(map.added_new_ranks == std::vector<uint32_t>{5});
}

TEST_CASE("a member that lost slots keeps its low slots, and the change is still a shrink") {
  const RankTable before(view(1, kThree));
  ViewMember b_smaller = kThree[1];
  b_smaller.slots = 1;
  const auto map = survivor_ranks(before, RankTable(view(2, {kThree[0], b_smaller, kThree[2]})));
  CHECK(map.new_rank_of_old == RankMap{0, 1, 2, gone, gone, 3});
  CHECK(map.removed_old_ranks == std::vector<uint32_t>{3, 4});
  CHECK(map.leaves_only());
}

TEST_CASE("property: after leaves only, the survivor map is exactly a pure compaction of the old ranks") {
  std::mt19937_64 rng(314159);
  const RandomViewShape shape{.max_hosts = 10, .max_members_per_host = 3, .witnesses = true};
  for (int i = 0; i < 400; ++i) {
    const auto members = random_members(rng, shape);
    const RankTable before(view(shape.epoch, members));
    std::vector<ViewMember> kept;
    std::set<std::string> left;
    for (const ViewMember& m : members) {
      if (rng() % 3 == 0) {
        left.insert(m.name);
      } else {
        kept.push_back(m);
      }
    }
    const RankTable after(view(shape.epoch + 1, kept));
    const auto map = survivor_ranks(before, after);

    // The compaction, computed independently: drop the leavers' ranks, number the rest in order.
    RankMap compaction(before.world_size(), gone);
    std::vector<uint32_t> removed;
    uint32_t next = 0;
    for (uint32_t r = 0; r < before.world_size(); ++r) {
      if (left.count(before.at(r)->member)) {
        removed.push_back(r);
      } else {
        compaction[r] = next++;
      }
    }
    CHECK(map.leaves_only());
    CHECK(map.new_rank_of_old == compaction);
    CHECK(map.removed_old_ranks == removed);
    CHECK(next == after.world_size());
    // And the new table really has each survivor at its mapped rank.
    for (uint32_t r = 0; r < before.world_size(); ++r) {
      if (!compaction[r]) continue;
      CHECK(after.at(*compaction[r])->member == before.at(r)->member);
      CHECK(after.at(*compaction[r])->local_rank == before.at(r)->local_rank);
    }
  }
}

TEST_CASE("property: with joins and leaves mixed, survivors keep their relative order and newcomers follow them") {
  std::mt19937_64 rng(2718);
  const RandomViewShape shape{.max_hosts = 10, .max_members_per_host = 3, .witnesses = true};
  for (int i = 0; i < 400; ++i) {
    const auto members = random_members(rng, shape);
    std::vector<ViewMember> next_members;
    for (const ViewMember& m : members) {
      if (rng() % 4 != 0) next_members.push_back(m);
    }
    const size_t joins = rng() % 3;
    for (size_t j = 0; j < joins; ++j) {
      const std::string name = std::string(1, static_cast<char>('a' + rng() % 26)) + "new" + std::to_string(j);
      next_members.push_back(member(name, "jhost" + std::to_string(j), 1 + rng() % 4, shape.epoch + 1));
    }
    const RankTable before(view(shape.epoch, members));
    const RankTable after(view(shape.epoch + 1, next_members));
    const auto map = survivor_ranks(before, after);
    std::optional<uint32_t> previous;
    size_t survivors = 0;
    for (const auto& to : map.new_rank_of_old) {
      if (!to) continue;
      ++survivors;
      if (previous) CHECK(*to > *previous);
      previous = to;
    }
    CHECK(survivors + map.removed_old_ranks.size() == before.world_size());
    CHECK(survivors + map.added_new_ranks.size() == after.world_size());
    CHECK(map.leaves_only() == map.added_new_ranks.empty());
    // Newcomers take the ranks after every survivor.
    for (size_t k = 0; k < map.added_new_ranks.size(); ++k) CHECK(map.added_new_ranks[k] == survivors + k);
  }
}

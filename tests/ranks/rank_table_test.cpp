// RankTable: hand-written tables for joins, leaves and mixed slot counts, lookups, and properties
// over random views (input order never matters, a join never moves an existing rank).
#include "ranks/rank_table.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <random>

#include "view_builders.hpp"

using shoal::membership::View;
using shoal::membership::ViewMember;
using shoal::ranks::RankEntry;
using shoal::ranks::RankTable;
using shoal::testing::member;
using shoal::testing::random_members;
using shoal::testing::RandomViewShape;
using shoal::testing::view;

namespace {

// rank, member, local rank, node rank, local world size: spelled out in the tests.
struct Row {
  uint32_t rank;
  const char* member;
  uint32_t local;
  uint32_t node;
  uint32_t local_world;
};

std::vector<RankEntry> rows(std::initializer_list<Row> list) {
  std::vector<RankEntry> out;
  for (const Row& r : list) out.push_back(RankEntry{r.rank, r.local, r.node, r.local_world, r.member});
  return out;
}

ViewMember at_addr(ViewMember m, std::string addr) {
  m.addr = std::move(addr);
  return m;
}

}  // namespace

TEST_CASE("ranks follow join epoch then name, and one member's slots are contiguous") {
  const RankTable t(
      view(1, {member("c", "hc", 1, 1), member("b", "hb", 3, 0), at_addr(member("a", "ha", 2, 0), "10.0.0.1:7946")}));
  CHECK(t.ranks() == rows({
                         {0, "a", 0, 0, 2},
                         {1, "a", 1, 0, 2},
                         {2, "b", 0, 1, 3},
                         {3, "b", 1, 1, 3},
                         {4, "b", 2, 1, 3},
                         {5, "c", 0, 2, 1},
                     }));
  CHECK(t.world_size() == 6);
  CHECK(t.node_count() == 3);
  CHECK(t.master_addr() == "10.0.0.1");  // the host part of rank 0's address, not its host name
  CHECK(t.epoch() == 1);
}

TEST_CASE("a join appends the newcomers' ranks and leaves every existing rank as it was") {
  const RankTable before(view(1, {member("m1", "h1", 2, 0), member("m2", "h2", 2, 1)}));
  CHECK(before.ranks() == rows({
                              {0, "m1", 0, 0, 2},
                              {1, "m1", 1, 0, 2},
                              {2, "m2", 0, 1, 2},
                              {3, "m2", 1, 1, 2},
                          }));
  // "a0" sorts before every old name but joined last, so it still goes to the end.
  const RankTable after(view(
      2, {member("m1", "h1", 2, 0), member("m2", "h2", 2, 1), member("z9", "h4", 1, 2), member("a0", "h3", 3, 2)}));
  CHECK(after.ranks() == rows({
                             {0, "m1", 0, 0, 2},
                             {1, "m1", 1, 0, 2},
                             {2, "m2", 0, 1, 2},
                             {3, "m2", 1, 1, 2},
                             {4, "a0", 0, 2, 3},
                             {5, "a0", 1, 2, 3},
                             {6, "a0", 2, 2, 3},
                             {7, "z9", 0, 3, 1},
                         }));
  CHECK(after.master_addr() == before.master_addr());
}

TEST_CASE("a leave compacts the survivors in their old order") {
  const std::vector<ViewMember> four = {member("a", "ha", 2, 0), member("b", "hb", 3, 0), member("c", "hc", 1, 1),
                                        member("d", "hd", 2, 2)};
  const RankTable before(view(2, four));
  CHECK(before.ranks() == rows({
                              {0, "a", 0, 0, 2},
                              {1, "a", 1, 0, 2},
                              {2, "b", 0, 1, 3},
                              {3, "b", 1, 1, 3},
                              {4, "b", 2, 1, 3},
                              {5, "c", 0, 2, 1},
                              {6, "d", 0, 3, 2},
                              {7, "d", 1, 3, 2},
                          }));
  const RankTable without_b(view(3, {four[0], four[2], four[3]}));
  CHECK(without_b.ranks() == rows({
                                 {0, "a", 0, 0, 2},
                                 {1, "a", 1, 0, 2},
                                 {2, "c", 0, 1, 1},
                                 {3, "d", 0, 2, 2},
                                 {4, "d", 1, 2, 2},
                             }));
  // Rank 0's member leaving moves MASTER_ADDR to the new rank 0.
  const RankTable without_a(view(3, {four[1], four[2], four[3]}));
  CHECK(without_a.ranks() == rows({
                                 {0, "b", 0, 0, 3},
                                 {1, "b", 1, 0, 3},
                                 {2, "b", 2, 0, 3},
                                 {3, "c", 0, 1, 1},
                                 {4, "d", 0, 2, 2},
                                 {5, "d", 1, 2, 2},
                             }));
  CHECK(before.master_addr() == "ha");
  CHECK(without_a.master_addr() == "hb");
}

TEST_CASE("mixed slot counts work and witnesses get neither ranks nor a node rank") {
  const RankTable t(view(4, {member("w", "hw", 0, 0), member("big", "h1", 8, 0), member("one", "h2", 1, 1),
                             member("mid", "h3", 4, 1), member("w2", "hw2", 0, 3)}));
  CHECK(t.ranks() == rows({
                         {0, "big", 0, 0, 8},
                         {1, "big", 1, 0, 8},
                         {2, "big", 2, 0, 8},
                         {3, "big", 3, 0, 8},
                         {4, "big", 4, 0, 8},
                         {5, "big", 5, 0, 8},
                         {6, "big", 6, 0, 8},
                         {7, "big", 7, 0, 8},
                         {8, "mid", 0, 1, 4},
                         {9, "mid", 1, 1, 4},
                         {10, "mid", 2, 1, 4},
                         {11, "mid", 3, 1, 4},
                         {12, "one", 0, 2, 1},
                     }));
  CHECK(t.node_count() == 3);
  CHECK(t.master_addr() == "h1");  // the witness is first in the view but holds no rank
  CHECK(t.ranks_of("w").empty());
  CHECK(t.node_of("w") == nullptr);
}

TEST_CASE("lookups by global rank, by member and slot, and by member agree with the table") {
  const RankTable t(view(1, {member("a", "ha", 2, 0), member("b", "hb", 3, 1)}));
  REQUIRE(t.at(3) != nullptr);
  CHECK(t.at(3)->member == "b");
  CHECK(t.at(3)->local_rank == 1);
  CHECK(t.at(5) == nullptr);
  REQUIRE(t.find("b", 2) != nullptr);
  CHECK(t.find("b", 2)->global_rank == 4);
  CHECK(t.find("b", 3) == nullptr);
  CHECK(t.find("nobody", 0) == nullptr);
  const auto b_ranks = t.ranks_of("b");
  REQUIRE(b_ranks.size() == 3);
  CHECK(b_ranks[0].global_rank == 2);
  CHECK(b_ranks[2].global_rank == 4);
  CHECK(t.ranks_of("nobody").empty());
  REQUIRE(t.node_of("b") != nullptr);
  CHECK(t.node_of("b")->first_rank == 2);
  CHECK(t.node_of("b")->node_rank == 1);
  CHECK(t.node_of("b")->member.host == "hb");
}

TEST_CASE("an empty view and a view of witnesses give an empty world with no master address") {
  const RankTable empty{View()};
  CHECK(empty.world_size() == 0);
  CHECK(empty.node_count() == 0);
  CHECK(empty.master_addr().empty());
  const RankTable witnesses(view(1, {member("w", "hw", 0, 0)}));
  CHECK(witnesses.world_size() == 0);
  CHECK(witnesses.master_addr().empty());
  CHECK(witnesses.at(0) == nullptr);
}

TEST_CASE("MASTER_ADDR of an IPv6 rank 0 carries no brackets") {
  const RankTable t(view(1, {at_addr(member("a", "ha", 1, 0), "[fd00::1]:7946")}));
  CHECK(t.master_addr() == "fd00::1");
}

TEST_CASE("property: the table is the same however the members were supplied") {
  std::mt19937_64 rng(20240601);
  const RandomViewShape shape{.max_hosts = 10, .max_members_per_host = 3, .witnesses = true};
  for (int i = 0; i < 300; ++i) {
    auto members = random_members(rng, shape);
    const RankTable reference(view(shape.epoch, members));
    std::shuffle(members.begin(), members.end(), rng);
    CHECK(RankTable(view(shape.epoch, members)) == reference);
  }
}

TEST_CASE("property: ranks are dense, each member's slots contiguous, and node ranks count members with slots") {
  std::mt19937_64 rng(7);
  const RandomViewShape shape{.max_hosts = 10, .max_members_per_host = 3, .witnesses = true};
  for (int i = 0; i < 300; ++i) {
    const View v = view(shape.epoch, random_members(rng, shape));
    const RankTable t(v);
    CHECK(t.world_size() == v.total_slots());
    uint32_t next_rank = 0;
    uint32_t next_node = 0;
    for (const ViewMember& m : v.members()) {
      const auto mine = t.ranks_of(m.name);
      REQUIRE(mine.size() == m.slots);
      for (uint32_t slot = 0; slot < m.slots; ++slot) {
        CHECK(mine[slot].global_rank == next_rank++);
        CHECK(mine[slot].local_rank == slot);
        CHECK(mine[slot].node_rank == next_node);
        CHECK(mine[slot].local_world_size == m.slots);
      }
      if (m.slots > 0) ++next_node;
    }
    CHECK(t.node_count() == next_node);
  }
}

TEST_CASE("property: a join never changes an existing rank") {
  std::mt19937_64 rng(99);
  const RandomViewShape shape{.max_hosts = 10, .max_members_per_host = 3, .witnesses = true};
  for (int i = 0; i < 300; ++i) {
    auto members = random_members(rng, shape);
    const RankTable before(view(shape.epoch, members));
    const int joiners = 1 + static_cast<int>(rng() % 3);
    for (int j = 0; j < joiners; ++j) {
      // A random first letter: newcomers' names sort anywhere among the old ones ("m<i>").
      const std::string name = std::string(1, static_cast<char>('a' + rng() % 26)) + "new" + std::to_string(j);
      members.push_back(member(name, "newhost" + std::to_string(j), static_cast<uint32_t>(rng() % 5), shape.epoch + 1));
    }
    const RankTable after(view(shape.epoch + 1, members));
    REQUIRE(after.world_size() >= before.world_size());
    for (const RankEntry& old_rank : before.ranks()) CHECK(*after.at(old_rank.global_rank) == old_rank);
    if (before.world_size() > 0) CHECK(after.master_addr() == before.master_addr());
  }
}

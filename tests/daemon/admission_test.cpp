// Checkpoint admission: pushes only from the member placement sends here, fetches only from members.
#include "ckpt_service/admission.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>

using namespace shoal::ckpt_service;
using shoal::membership::View;
using shoal::membership::ViewMember;

TEST_CASE("a push is admitted only from the member whose replicas placement sends here; a fetch from any member") {
  // Three hosts, one replica each: every owner's holder is exactly one other member.
  auto view = View::make(3, {ViewMember{"a", "ha", "10.0.0.1:7946", 1, 1, 1}, ViewMember{"b", "hb", "10.0.0.2:7946", 1, 1, 1},
                             ViewMember{"c", "hc", "10.0.0.3:7946", 1, 2, 1}});
  REQUIRE(view);
  const std::optional<View> v = *view;
  int admitted = 0;
  const std::map<std::string_view, uint32_t> rank_of = {{"a", 0}, {"b", 1}, {"c", 2}};  // one slot each
  for (const char* sender : {"a", "b", "c"}) {
    for (const char* self : {"a", "b", "c"}) {
      if (std::string_view(sender) == self) {
        CHECK(judge_push(v, self, sender, 1, rank_of.at(sender)) == Refusal::not_placed);  // never to itself
        continue;
      }
      if (!judge_push(v, self, sender, 1, rank_of.at(sender))) ++admitted;
    }
  }
  CHECK(admitted == 3);  // one holder per owner
  CHECK(judge_push(v, "a", "mallory", 1, 0) == Refusal::not_member);
  CHECK(judge_push(std::nullopt, "a", "b", 1, 1) == Refusal::no_view);
  CHECK(judge_push(v, "a", "b/0", 1, 1) == Refusal::not_member);  // sessions never push

  CHECK(judge_fetch(v, "b") == std::nullopt);
  CHECK(judge_fetch(v, "b/3") == std::nullopt);  // a trainer of member b
  CHECK(judge_fetch(v, "mallory/0") == Refusal::not_member);
  CHECK(judge_fetch(std::nullopt, "b") == Refusal::no_view);
}

TEST_CASE("a placed member pushes only its own ranks, of this view or the one before") {
  // a (2 slots: ranks 0, 1), b (rank 2), c (rank 3); then b leaves and c's rank becomes 2.
  auto before = View::make(3, {ViewMember{"a", "ha", "10.0.0.1:7946", 2, 1, 1}, ViewMember{"b", "hb", "10.0.0.2:7946", 1, 1, 1},
                               ViewMember{"c", "hc", "10.0.0.3:7946", 1, 2, 1}});
  auto after = View::make(4, {ViewMember{"a", "ha", "10.0.0.1:7946", 2, 1, 1}, ViewMember{"c", "hc", "10.0.0.3:7946", 1, 2, 1}});
  REQUIRE(before);
  REQUIRE(after);
  const std::optional<View> now = *after;
  const std::optional<View> prev = *before;
  // With two hosts left, each holds the other's replicas.
  CHECK(judge_push(now, "a", "c", 1, 2, prev) == std::nullopt);  // c's rank now
  CHECK(judge_push(now, "a", "c", 1, 3, prev) == std::nullopt);  // c's rank before the leave
  CHECK(judge_push(now, "a", "c", 1, 3) == Refusal::not_its_rank);
  CHECK(judge_push(now, "a", "c", 1, 0, prev) == Refusal::not_its_rank);  // a's own rank, forged by c
  CHECK(judge_push(now, "a", "c", 1, 1000000, prev) == Refusal::not_its_rank);
  CHECK(judge_push(now, "c", "a", 1, 1, prev) == std::nullopt);
  CHECK(judge_push(now, "c", "a", 1, 2, prev) == Refusal::not_its_rank);  // b's rank before, c's now
}

TEST_CASE("a view placed once answers as the placement does: every owner's holders, every holder's owners") {
  // Views of 1 to 40 members on fewer hosts (two members share a host every fifth), witnesses among them,
  // with 1 to 3 replicas: the indexed lookups agree with the placement's own linear answers for every member.
  for (size_t n : {1u, 2u, 3u, 7u, 40u}) {
    std::vector<ViewMember> ms;
    for (size_t i = 0; i < n; ++i) {
      const std::string host = "h" + std::to_string(i % 5 == 4 ? i - 1 : i);
      ms.push_back(ViewMember{"m" + std::to_string(i), host, "10.0.0." + std::to_string(i + 1) + ":7946",
                              static_cast<uint32_t>(i % 7 == 3 ? 0 : 2), 1, 1});
    }
    const View view = View::make(5, ms).value();
    for (uint32_t replicas : {1u, 2u, 3u}) {
      const auto placement = shoal::ranks::place_replicas(view, replicas);
      for (const auto& self : ms) {
        const PlacedView placed(view, replicas, self.name);
        INFO(n << " members, " << replicas << " replicas, self " << self.name);
        CHECK(placed.placement() == placement);
        const auto held = placement.held_by(self.name);
        for (const auto& owner : ms) {
          const auto* linear = placement.of(owner.name);
          const auto* indexed = placed.replicas_of(owner.name);
          CHECK((linear == nullptr) == (indexed == nullptr));
          if (linear != nullptr && indexed != nullptr) CHECK(*linear == *indexed);
          CHECK(placed.holds_for(owner.name) == (std::find(held.begin(), held.end(), owner.name) != held.end()));
        }
        CHECK(placed.replicas_of("nobody") == nullptr);
        CHECK_FALSE(placed.holds_for("nobody"));
      }
    }
    const PlacedView placed(view, 1, "m0");
    for (const auto& entry : placed.table().ranks()) CHECK(placed.gives(entry.member, entry.global_rank));
    CHECK_FALSE(placed.gives("m0", placed.table().world_size()));  // out of range
  }
}

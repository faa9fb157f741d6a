// plan_gc as a table: which objects named like shoal's segments `shoal ckpt gc` may remove.
#include "ckpt_shm/segment_gc.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>

using namespace shoal::ckpt;

TEST_CASE("only shoal-shaped names are considered, and their store is the part after shoal.") {
  CHECK(segment_store_of("shoal.job-1.r0.v1") == "job-1");
  CHECK(segment_store_of("shoal.job_a.p3.s12000") == "job_a");
  CHECK(segment_store_of("shoal.j.p3.spare") == "j");
  CHECK_FALSE(segment_store_of("shoal.j.r0").has_value());
  CHECK_FALSE(segment_store_of("shoal.j.x0.v1").has_value());
  CHECK_FALSE(segment_store_of("shoal.j.p0.sx").has_value());
  CHECK_FALSE(segment_store_of("shoal..r0.v1").has_value());
  CHECK_FALSE(segment_store_of("sem.shoal.j.r0.v1").has_value());
  CHECK_FALSE(segment_store_of("pulse-shm-1").has_value());
}

TEST_CASE("gc removes only this user's regular, old objects of stores no live agent uses") {
  const std::vector<ShmObject> objects = {
      {"shoal.dead.r0.v0", true, 1000, 10, 3600},   // remove
      {"shoal.live.r0.v0", true, 1000, 10, 3600},   // a live agent's store
      {"shoal.dead.p1.s5", true, 1000, 10, 5},      // just written
      {"shoal.dead.p1.s4", true, 2000, 10, 3600},   // another user's
      {"shoal.live.r1.v0", true, 2000, 10, 3600},   // another user's, even of a live store
      {"shoal.dead.r1.v0", false, 1000, 0, 3600},   // a FIFO or a link
      {"unrelated", true, 1000, 10, 3600},          // not shoal's: not listed
  };
  const auto plan = plan_gc(objects, {"live"}, 1000, 60);
  REQUIRE(plan.size() == 6);
  std::map<std::string, GcVerdict> by_name;
  for (const auto& e : plan) by_name[e.name] = e.verdict;
  CHECK(by_name.at("shoal.dead.r0.v0") == GcVerdict::remove);
  CHECK(by_name.at("shoal.live.r0.v0") == GcVerdict::in_use);
  CHECK(by_name.at("shoal.dead.p1.s5") == GcVerdict::too_young);
  CHECK(by_name.at("shoal.dead.p1.s4") == GcVerdict::refused);
  CHECK(by_name.at("shoal.live.r1.v0") == GcVerdict::refused);
  CHECK(by_name.at("shoal.dead.r1.v0") == GcVerdict::refused);
  CHECK(std::is_sorted(plan.begin(), plan.end(), [](const GcEntry& a, const GcEntry& b) { return a.name < b.name; }));
}

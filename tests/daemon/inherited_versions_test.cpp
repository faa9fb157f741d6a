// Versions found at start under a job name nobody chose: a cluster that formed anew removes them, one
// joined while running adopts them; a slot rewritten since start is this run's either way.
#include "ckpt_service/inherited_versions.hpp"

#include <doctest/doctest.h>

using shoal::ckpt::HeldSegment;
using shoal::ckpt_service::formed_anew;
using shoal::ckpt_service::InheritedVersions;
using shoal::membership::View;
using shoal::membership::ViewMember;

namespace {

ViewMember member(const std::string& name, uint64_t join_epoch) {
  return ViewMember{name, name, "127.0.0." + std::to_string(name.size() + join_epoch) + ":7946", 1, join_epoch, 1};
}

View view(uint64_t epoch, std::vector<ViewMember> members) {
  auto v = View::make(epoch, std::move(members));
  REQUIRE(v);
  return *v;
}

HeldSegment sealed(const std::string& segment, uint64_t step, uint64_t sequence) {
  HeldSegment h;
  h.segment = segment;
  h.version.emplace();
  h.version->id = {"default", 0, step, sequence, 1};
  return h;
}

}  // namespace

TEST_CASE("a view formed anew is one where every member joined at its epoch") {
  CHECK(formed_anew(view(1, {member("a", 1)})));
  CHECK(formed_anew(view(1, {member("a", 1), member("bb", 1)})));
  // A whole cluster that restarted forms at epoch 1 again; a later epoch can still be a fresh formation.
  CHECK(formed_anew(view(4, {member("a", 4), member("bb", 4)})));
  CHECK_FALSE(formed_anew(view(2, {member("a", 1), member("bb", 2)})));  // bb joined a running cluster
  CHECK_FALSE(formed_anew(View()));
}

TEST_CASE("versions set aside at start are hidden until the first view, then removed or adopted") {
  const std::vector<HeldSegment> at_start = {sealed("/s.r0.v0", 7, 3), sealed("/s.p1.s5", 5, 2), HeldSegment{}};
  SUBCASE("a cluster formed anew: they are another run's") {
    InheritedVersions inherited;
    inherited.record(at_start);
    CHECK(inherited.without(at_start).size() == 1);  // only the unsealed object stays listed
    const auto foreign = inherited.settle(view(1, {member("a", 1)}));
    CHECK(foreign.size() == 2);
    CHECK(inherited.settled());
    CHECK(inherited.settle(view(2, {member("a", 1)})).empty());
  }
  SUBCASE("an agent joining a running cluster: they are the job's") {
    InheritedVersions inherited;
    inherited.record(at_start);
    CHECK(inherited.settle(view(3, {member("a", 1), member("bb", 3)})).empty());
    CHECK(inherited.without(at_start).size() == 3);
  }
  SUBCASE("a slot a trainer rewrote since start is not hidden") {
    InheritedVersions inherited;
    inherited.record(at_start);
    const std::vector<HeldSegment> now = {sealed("/s.r0.v0", 8, 4)};
    CHECK(inherited.without(now).size() == 1);
  }
}

// desired_view: who stays, who goes, who joins, and what blocks a change — a pure function.
#include <doctest/doctest.h>

#include "keeper_cluster.hpp"
#include "membership/desired_view.hpp"

using namespace shoal::membership;
using namespace shoal::membership::testing;
using shoal::gossip::State;
using std::chrono::milliseconds;

namespace {

View view_of(uint64_t epoch, std::vector<size_t> idx, uint64_t join_epoch = 1) {
  std::vector<ViewMember> ms;
  for (size_t i : idx) ms.push_back(ViewMember{name_of(i), "host" + std::to_string(i), addr_of(i), 2, join_epoch, 1});
  return View::make(epoch, ms).value();
}

}  // namespace

TEST_CASE("a view that matches gossip needs no change") {
  FlapDamper damper;
  const auto gossip = std::vector{member(0), member(1)};
  damper.observe(gossip, Time(0));
  const Desired d = desired_view(view_of(1, {0, 1}), gossip, damper, Config{}, Time(0));
  CHECK_FALSE(d.differs);
  CHECK(d.blocked.empty());
}

TEST_CASE("suspects stay, dead and forgotten members go, left members make a graceful-only change") {
  FlapDamper damper;
  Config cfg;
  {
    const auto gossip = std::vector{member(0), member(1, State::suspect), member(2, State::left)};
    const Desired d = desired_view(view_of(1, {0, 1, 2}), gossip, damper, cfg, Time(0));
    CHECK(d.differs);
    CHECK(d.graceful_only);
    CHECK(d.members.size() == 2);
  }
  {
    const auto gossip = std::vector{member(0), member(1, State::dead)};  // 2 forgotten entirely
    const Desired d = desired_view(view_of(1, {0, 1, 2}), gossip, damper, cfg, Time(0));
    CHECK(d.members.size() == 1);
    CHECK_FALSE(d.graceful_only);
    CHECK_FALSE(d.majority_live);
    CHECK(d.blocked.find("majority lost: 1 of 3") != std::string::npos);
    CHECK(d.blocked.find("lost: h1, h2") != std::string::npos);
  }
}

TEST_CASE("a change made only of deaths on a confirmed refusal (and leaves) is refused_only; any other is not") {
  FlapDamper damper;
  Config cfg;
  auto refused = member(3, State::dead);
  refused.refused = true;
  {
    const Desired d = desired_view(view_of(1, {0, 1, 2, 3}), {member(0), member(1), member(2), refused}, damper, cfg,
                                   Time(0));
    CHECK(d.refused_only);
    CHECK_FALSE(d.graceful_only);
  }
  {
    const Desired d = desired_view(view_of(1, {0, 1, 2, 3}),
                                   {member(0), member(1), member(2, State::left), refused}, damper, cfg, Time(0));
    CHECK(d.refused_only);
  }
  {  // a silent host's death (no refusal) beside it: the normal window
    const Desired d = desired_view(view_of(1, {0, 1, 2, 3}),
                                   {member(0), member(1), member(2, State::dead), refused}, damper, cfg, Time(0));
    CHECK_FALSE(d.refused_only);
  }
  {  // a joiner beside it: the normal window
    damper.observe({member(0), member(1), member(2), member(4)}, Time(0));
    const Desired d = desired_view(view_of(1, {0, 1, 2, 3}), {member(0), member(1), member(2), refused, member(4)},
                                   damper, cfg, milliseconds(20'000));
    CHECK_FALSE(d.refused_only);
  }
}

TEST_CASE("joiners get the next epoch as join epoch, oldest alive first, up to --max-hosts") {
  FlapDamper damper;
  damper.observe({member(0), member(3)}, Time(0));
  damper.observe({member(0), member(3), member(2)}, milliseconds(5));
  Config cfg;
  cfg.max_hosts = 2;
  const Desired d = desired_view(view_of(4, {0}), {member(0), member(2), member(3)}, damper, cfg, milliseconds(10));
  REQUIRE(d.members.size() == 2);
  CHECK(d.members[1].name == "h3");  // alive since 0 ms, before h2 (5 ms)
  CHECK(d.members[1].join_epoch == 5);
  CHECK(d.members[0].join_epoch == 1);
}

TEST_CASE("the availability policy does not block on a lost majority") {
  FlapDamper damper;
  Config cfg;
  cfg.policy = QuorumPolicy::any;
  const Desired d = desired_view(view_of(1, {0, 1, 2}), {member(0), member(1, State::dead), member(2, State::dead)},
                                 damper, cfg, Time(0));
  CHECK(d.blocked.empty());
  CHECK_FALSE(d.majority_live);
}

TEST_CASE("the flap damper holds a removed member out until it stayed alive for the hold-down") {
  FlapDamper damper;
  damper.observe({member(0), member(1)}, Time(0));
  damper.removed("h1", 1, milliseconds(100));
  CHECK_FALSE(damper.eligible("h1", 1, milliseconds(500), milliseconds(1000)));
  CHECK(damper.eligible("h1", 1, milliseconds(1100), milliseconds(1000)));
  // Going dead restarts the clock.
  damper.observe({member(0), member(1, State::dead)}, milliseconds(1200));
  damper.observe({member(0), member(1)}, milliseconds(1300));
  CHECK_FALSE(damper.eligible("h1", 1, milliseconds(2000), milliseconds(1000)));
  CHECK(damper.eligible("h1", 1, milliseconds(2300), milliseconds(1000)));
  // A new generation is a restart, not a flap: no hold-down.
  damper.observe({member(0), member(1, State::alive, 2)}, milliseconds(2400));
  CHECK(damper.eligible("h1", 2, milliseconds(2400), milliseconds(1000)));
}

TEST_CASE("a member started with seeds never forms a cluster of itself alone") {
  FlapDamper damper;
  Config cfg;
  cfg.joining = true;
  // Its seed answered, then left before any view formed: alone, it waits.
  const auto alone = std::vector{member(0), member(1, State::left)};
  damper.observe(alone, Time(0));
  const Desired d = desired_view(View{}, alone, damper, cfg, milliseconds(10));
  CHECK(d.differs);
  CHECK(d.blocked.find("never forms a cluster alone") != std::string::npos);
  // With another member alive it forms the first view as usual.
  const auto two = std::vector{member(0), member(2)};
  damper.observe(two, milliseconds(20));
  CHECK(desired_view(View{}, two, damper, cfg, milliseconds(30)).blocked.empty());
  // A member that was in a view may go on alone when the rules allow (this is about first views only).
  cfg.min_hosts = 1;
  const Desired later = desired_view(view_of(3, {0, 1}), alone, damper, cfg, milliseconds(40));
  CHECK(later.blocked.empty());
  // And a member started without seeds forms a cluster of one.
  cfg.joining = false;
  CHECK(desired_view(View{}, alone, damper, cfg, milliseconds(50)).blocked.empty());
}

TEST_CASE("a view vouches for the members that joined in it, as alive gossip records with its metadata") {
  std::vector<ViewMember> ms;
  ms.push_back(ViewMember{name_of(0), "host0", addr_of(0), 2, 1, 1});  // joined in epoch 1
  ms.push_back(ViewMember{name_of(1), "host1", addr_of(1), 4, 3, 7});  // joined in this view, epoch 3
  const View v = View::make(3, ms).value();
  const auto vouched = vouched_by(v);
  REQUIRE(vouched.size() == 1);
  CHECK(vouched[0].id.name == name_of(1));
  CHECK(vouched[0].id.generation == 7);
  CHECK(vouched[0].id.addr == addr_of(1));
  CHECK(vouched[0].meta.host == "host1");
  CHECK(vouched[0].meta.slots == 4);
  CHECK(vouched[0].state == State::alive);
  CHECK(vouched[0].incarnation == 0);
}

// ViewKeeper against a key holder that forges requests: COMMITs of epoch 2^64-1, of far epochs, of member
// lists without the real hosts, from outside both views, and ballots of round 2^64-1. None is installed
// or promised, each is counted by cause, and the cluster goes on committing one view per epoch. Also the
// honest side of the same rule: a member that missed views catches up once its view's members confirm.
#include <doctest/doctest.h>

#include <limits>
#include <map>
#include <optional>

#include "keeper_cluster.hpp"

using namespace shoal::membership;
using namespace shoal::membership::testing;
using shoal::gossip::State;
using std::chrono::milliseconds;

namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

ViewMember fake(const std::string& name, uint64_t join_epoch) {
  return ViewMember{name, "evil", "10.66.0." + std::to_string(name.size() + name.back() % 50) + ":7946", 8, join_epoch,
                    1};
}

// A view of `epoch` with `members`, carrying `like`'s lineage.
View make_view(uint64_t epoch, std::vector<ViewMember> members, const View& like) {
  auto v = View::make(epoch, std::move(members), like.lineage());
  REQUIRE(v.ok());
  return *v;
}

shoal::wire::ViewRequest commit_of(const View& v, const std::string& from, uint64_t generation = 1) {
  shoal::wire::ViewRequest req;
  req.set_epoch(v.epoch());
  req.set_from_name(from);
  req.set_from_generation(generation);
  req.mutable_commit()->set_hash(v.hash());
  to_msg(v, req.mutable_commit()->mutable_view());
  return req;
}

uint64_t refused(KeeperCluster& c, size_t i, ViewRefusal why) {
  return c.node(i).stats().refused[static_cast<size_t>(why)];
}

// Five members that committed epoch 1 with all of them.
void form(KeeperCluster& c) {
  c.everyone_sees(range(c.size()));
  c.run_for(milliseconds(300));
  for (size_t i = 0; i < c.size(); ++i) REQUIRE(c.node(i).view().epoch() == 1);
}

// Member 4 crashes; the others must commit epoch `epoch` without it.
void crash_and_recommit(KeeperCluster& c, uint64_t epoch) {
  c.crash(4);
  c.everyone_sees({0, 1, 2, 3}, {4});
  c.run_for(milliseconds(1500));
  for (size_t i = 0; i < 4; ++i) {
    CAPTURE(i);
    CHECK(c.node(i).view().epoch() == epoch);
    CHECK(c.node(i).view().size() == 4);
  }
}

}  // namespace

TEST_CASE("a COMMIT of epoch 2^64-1 is refused and counted everywhere, and the next view still commits") {
  KeeperCluster c(5);
  form(c);
  const View wrap = make_view(kMax, c.node(0).view().members(), c.node(0).view());
  for (size_t i = 0; i < 5; ++i) {
    const auto resp = c.inject(i, commit_of(wrap, "h1"));
    CHECK_FALSE(resp.empty());
    CHECK(c.node(i).view().epoch() == 1);
    CHECK(refused(c, i, ViewRefusal::epoch_overflow) == 1);
  }
  c.run_for(milliseconds(100));
  crash_and_recommit(c, 2);
  check_one_view_per_epoch(c);
}

TEST_CASE("COMMITs of a member list without the real hosts, of far epochs and from outsiders are installed nowhere") {
  KeeperCluster c(5);
  form(c);
  const View& real = c.node(0).view();
  // h1 claims the COMMIT: it is in the current view, so only confirmation can stop it.
  const View next = make_view(2, {fake("x", 2), fake("y", 2), fake("zz", 2)}, real);
  const View far = make_view(40, {fake("x", 40), fake("y", 40)}, real);
  const View beyond = make_view(1 + kMaxEpochJump + 1, real.members(), real);
  for (size_t i = 0; i < 5; ++i) {
    c.inject(i, commit_of(next, "h1"));
    c.inject(i, commit_of(far, "h3"));
    c.inject(i, commit_of(beyond, "h2"));
    c.inject(i, commit_of(next, "intruder"));  // in neither view
    c.inject(i, commit_of(next, "h2", 7));      // a member's name at a generation the view does not hold
  }
  c.run_for(milliseconds(200));  // the catch-up queries go out and come back
  for (size_t i = 0; i < 5; ++i) {
    CAPTURE(i);
    CHECK(c.node(i).view().epoch() == 1);
    CHECK(refused(c, i, ViewRefusal::outsider) == 2);
    CHECK(refused(c, i, ViewRefusal::epoch_jump) == 1);
    CHECK(refused(c, i, ViewRefusal::unconfirmed) >= 1);
    CHECK(c.node(i).stats().catch_ups == 0);
  }
  crash_and_recommit(c, 2);
  for (size_t i = 0; i < 4; ++i) CHECK(c.node(i).view().find("x") == nullptr);
  check_one_view_per_epoch(c);
}

TEST_CASE("a forged ballot of round 2^64-1 is refused, and proposers' rounds go on") {
  KeeperCluster c(5);
  form(c);
  shoal::wire::ViewRequest prepare;
  prepare.set_epoch(2);
  prepare.set_from_name("h4");
  prepare.set_from_generation(1);
  prepare.mutable_ballot()->set_round(kMax);
  prepare.mutable_ballot()->set_proposer("h4");
  prepare.mutable_prepare();
  for (size_t i = 0; i < 5; ++i) {
    const auto bytes = c.inject(i, prepare);
    auto resp = decode_response(bytes);
    REQUIRE(resp.ok());
    CHECK(resp->verdict() == shoal::wire::ViewResponse::NACK);
    CHECK(refused(c, i, ViewRefusal::ballot) == 1);
  }
  crash_and_recommit(c, 2);
  check_one_view_per_epoch(c);
}

TEST_CASE("a member that missed views installs the newest once members of its view confirm it") {
  Config cfg;
  cfg.hold_down = milliseconds(300);
  KeeperCluster c(5, cfg);
  form(c);
  // h4 is cut off; the others see it dead and move on without it, twice (it is readmitted in between).
  for (size_t i = 0; i < 4; ++i) c.cut(i, 4);
  for (size_t i = 0; i < 4; ++i) {
    std::vector<shoal::gossip::Member> ms;
    for (size_t a : {0, 1, 2, 3}) ms.push_back(member(a));
    ms.push_back(member(4, State::dead));
    c.set_gossip(i, ms);
  }
  c.run_for(milliseconds(1000));
  REQUIRE(c.node(0).view().epoch() == 2);
  CHECK(c.node(4).view().epoch() == 1);
  // Healed: h4 is alive again everywhere and readmitted; its COMMIT jumps from epoch 1.
  c.heal();
  c.everyone_sees(range(5));
  c.run_for(milliseconds(2000));
  for (size_t i = 0; i < 5; ++i) {
    CAPTURE(i);
    CHECK(c.node(i).view().epoch() == 3);
    CHECK(c.node(i).view().size() == 5);
  }
  CHECK(c.node(4).stats().catch_ups >= 1);
  check_one_view_per_epoch(c);
}

TEST_CASE("a joiner takes its first view only once members of that view, alive in its gossip, hold it") {
  KeeperCluster c(4);
  for (size_t i = 0; i < 3; ++i) c.set_gossip(i, {member(0), member(1), member(2)});
  c.set_gossip(3, {member(0), member(1), member(2), member(3)});
  c.run_for(milliseconds(300));
  REQUIRE(c.node(0).view().epoch() == 1);
  REQUIRE(c.node(0).view().size() == 3);
  // h3 has no view: a forged first view, whose members are not in its gossip, confirms nothing.
  const View forged = make_view(5, {fake("x", 5), fake("y", 5), ViewMember{"h3", "host3", addr_of(3), 2, 5, 1}},
                                c.node(0).view());
  c.inject(3, commit_of(forged, "x"));
  c.run_for(milliseconds(50));
  CHECK(c.node(3).view().epoch() == 0);
  CHECK(refused(c, 3, ViewRefusal::unconfirmed) == 1);
  // The real cluster admits it: its COMMIT is confirmed by the members it names, and everyone agrees.
  c.everyone_sees(range(4));
  c.run_for(milliseconds(1000));
  for (size_t i = 0; i < 4; ++i) {
    CAPTURE(i);
    CHECK(c.node(i).view().epoch() == 2);
    CHECK(c.node(i).view().size() == 4);
  }
  check_one_view_per_epoch(c);
}

TEST_CASE("a joiner that cannot confirm the view offered to it asks again, backing off to joiner_catch_up_max") {
  // Five members commit epoch 1; then three of them crash, still alive in the joiner's gossip. The joiner
  // (h5) is offered epoch 1 and can hear only two of its five members hold it: too few to confirm. It
  // asks again and again, but with pauses doubling to joiner_catch_up_max, not every commit_retry: in a
  // join storm, every joiner asking every member twice a second filled the members' connection caps.
  KeeperCluster c(6);
  for (size_t i = 0; i < 5; ++i) c.set_gossip(i, {member(0), member(1), member(2), member(3), member(4)});
  c.crash(5);
  c.run_for(milliseconds(300));
  REQUIRE(c.node(0).view().epoch() == 1);
  REQUIRE(c.node(0).view().size() == 5);
  const View offered = c.node(0).view();
  for (size_t i : {2, 3, 4}) c.crash(i);
  c.start(5);
  c.set_gossip(5, {member(0), member(1), member(2), member(3), member(4), member(5)});
  c.inject(5, commit_of(offered, "h0"));
  c.run_for(milliseconds(60'000));
  CHECK(c.node(5).view().epoch() == 0);
  CHECK(refused(c, 5, ViewRefusal::unconfirmed) >= 1);
  // Rounds of 5 queries each: 50 ms doubling to 8 s is 8 rounds in the first 13 s, then one per 8 s (about
  // 14 in 60 s); at every commit_retry (0.5 s) it would have been about 120.
  const size_t rounds = c.queries_sent(5) / 5;
  CAPTURE(c.queries_sent(5));
  CHECK(rounds >= 8);
  CHECK(rounds <= 20);
}

TEST_CASE("a QUERY is answered with the committed view when it is newer than the asker's") {
  KeeperCluster c(3);
  c.everyone_sees(range(3));
  c.run_for(milliseconds(300));
  REQUIRE(c.node(1).view().epoch() == 1);
  shoal::wire::ViewRequest q;
  q.set_epoch(0);
  q.set_from_name("joiner");
  q.set_from_generation(1);
  q.mutable_query();
  auto behind = decode_response(c.inject(1, q));
  REQUIRE(behind.ok());
  CHECK(behind->verdict() == shoal::wire::ViewResponse::COMMITTED);
  REQUIRE(behind->has_committed());
  auto v = from_msg(behind->committed());
  REQUIRE(v.ok());
  CHECK(*v == c.node(1).view());
  q.set_epoch(1);
  auto level = decode_response(c.inject(1, q));
  REQUIRE(level.ok());
  CHECK(level->committed_epoch() == 1);
  CHECK_FALSE(level->has_committed());
  CHECK(c.node(1).stats().rejected.total() == 0);
}

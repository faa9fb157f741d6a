// ViewKeeper with several members on a small in-test network: bootstrap, removal, joins, graceful
// leaves, minority partitions, competing and crashing proposers. After every scenario, no two
// members ever committed different views for one epoch.
#include <doctest/doctest.h>

#include <optional>

#include "keeper_cluster.hpp"

using namespace shoal::membership;
using namespace shoal::membership::testing;
using shoal::gossip::State;
using std::chrono::milliseconds;

namespace {

std::vector<std::string> names(const View& v) {
  std::vector<std::string> out;
  for (const auto& m : v.members()) out.push_back(m.name);
  return out;
}

}  // namespace

TEST_CASE("members that all see each other alive commit one identical first view") {
  Config cfg;
  cfg.min_hosts = 4;
  KeeperCluster c(4, cfg);
  c.everyone_sees(range(4));
  c.run_for(milliseconds(300));
  for (size_t i = 0; i < 4; ++i) {
    CHECK(c.node(i).view().epoch() == 1);
    CHECK(c.node(i).view().size() == 4);
    CHECK(c.node(i).status().phase == KeeperPhase::stable);
  }
  CHECK(c.node(0).view().hash() == c.node(3).view().hash());
  check_one_view_per_epoch(c);
}

TEST_CASE("the first view's lineage is kept by every later view, also through the wire codec") {
  KeeperCluster c(4);
  c.everyone_sees(range(4));
  c.run_for(milliseconds(300));
  REQUIRE(c.node(0).view().epoch() == 1);
  const uint64_t lineage = c.node(0).view().lineage();
  CHECK(lineage != 0);
  c.crash(3);
  c.everyone_sees({0, 1, 2}, {3});
  c.run_for(milliseconds(300));
  REQUIRE(c.node(1).view().epoch() == 2);
  CHECK(c.node(1).view().lineage() == lineage);
  shoal::wire::ViewMsg msg;
  to_msg(c.node(1).view(), &msg);
  auto back = from_msg(msg);
  REQUIRE(back);
  CHECK(*back == c.node(1).view());
  msg.set_lineage(lineage + 1);  // a lineage changed on the way no longer matches the hash
  CHECK_FALSE(from_msg(msg));
  check_one_view_per_epoch(c);
}

TEST_CASE("no view forms below --min-hosts, and the status says how many are missing") {
  Config cfg;
  cfg.min_hosts = 3;
  KeeperCluster c(3, cfg);
  c.everyone_sees({0, 1});
  c.run_for(milliseconds(500));
  CHECK(c.node(0).view().epoch() == 0);
  CHECK(c.node(0).status().phase == KeeperPhase::forming);
  CHECK(c.node(0).status().reason.find("2 of --min-hosts 3") != std::string::npos);
  c.everyone_sees({0, 1, 2});
  c.run_for(milliseconds(300));
  CHECK(c.node(2).view().size() == 3);
}

TEST_CASE("a dead member is removed in one view change; a suspect stays") {
  KeeperCluster c(5);
  c.everyone_sees(range(5));
  c.run_for(milliseconds(300));
  REQUIRE(c.node(0).view().epoch() == 1);

  std::vector<shoal::gossip::Member> suspect_view;
  for (size_t i = 0; i < 5; ++i) suspect_view.push_back(member(i, i == 4 ? State::suspect : State::alive));
  for (size_t i = 0; i < 5; ++i) c.set_gossip(i, suspect_view);
  c.run_for(milliseconds(300));
  CHECK(c.node(0).view().epoch() == 1);

  c.crash(4);
  c.everyone_sees({0, 1, 2, 3}, {4});
  c.run_for(milliseconds(300));
  for (size_t i = 0; i < 4; ++i) {
    CHECK(c.node(i).view().epoch() == 2);
    CHECK(names(c.node(i).view()) == std::vector<std::string>{"h0", "h1", "h2", "h3"});
  }
  check_one_view_per_epoch(c);
}

TEST_CASE("the crash of the designated proposer (the smallest name) still yields one new view") {
  KeeperCluster c(4);
  c.everyone_sees(range(4));
  c.run_for(milliseconds(300));
  c.crash(0);
  c.everyone_sees({1, 2, 3}, {0});
  c.run_for(milliseconds(300));
  for (size_t i = 1; i < 4; ++i) {
    CHECK(c.node(i).view().epoch() == 2);
    CHECK(c.node(i).view().find("h0") == nullptr);
  }
  check_one_view_per_epoch(c);
}

TEST_CASE("a minority partition never commits and says why; the majority moves on") {
  KeeperCluster c(5);
  c.everyone_sees(range(5));
  c.run_for(milliseconds(300));
  // {0,1} | {2,3,4}: each side sees the other dead.
  for (size_t a : {0, 1}) {
    for (size_t b : {2, 3, 4}) c.cut(a, b);
  }
  for (size_t i : {0, 1}) {
    c.set_gossip(i, {member(0), member(1), member(2, State::dead), member(3, State::dead), member(4, State::dead)});
  }
  for (size_t i : {2, 3, 4}) {
    c.set_gossip(i, {member(0, State::dead), member(1, State::dead), member(2), member(3), member(4)});
  }
  c.run_for(milliseconds(3000));
  CHECK(c.node(0).view().epoch() == 1);
  CHECK(c.node(1).view().epoch() == 1);
  CHECK(c.node(0).status().phase == KeeperPhase::stalled);
  CHECK(c.node(0).status().reason.find("majority lost: 2 of 5") != std::string::npos);
  CHECK(c.node(2).view().epoch() == 2);
  CHECK(names(c.node(4).view()) == std::vector<std::string>{"h2", "h3", "h4"});
  check_one_view_per_epoch(c);
}

TEST_CASE("after a split that stalled both sides heals, members whose refutations come last are not removed") {
  // Seen in the lab (tests/lab, partition_heal_no_churn): the settle window counted from the start of
  // the split, so the first members seen alive again were proposed at once, without the rest.
  KeeperCluster c(6);
  c.everyone_sees(range(6));
  c.run_for(milliseconds(300));
  REQUIRE(c.node(0).view().epoch() == 1);
  for (size_t a : {0, 1, 2}) {
    for (size_t b : {3, 4, 5}) c.cut(a, b);
  }
  for (size_t i : {0, 1, 2}) c.set_gossip(i, {member(0), member(1), member(2), member(3, State::dead),
                                              member(4, State::dead), member(5, State::dead)});
  for (size_t i : {3, 4, 5}) c.set_gossip(i, {member(0, State::dead), member(1, State::dead),
                                              member(2, State::dead), member(3), member(4), member(5)});
  c.run_for(milliseconds(3000));
  REQUIRE(c.node(0).status().phase == KeeperPhase::stalled);
  REQUIRE(c.node(3).status().phase == KeeperPhase::stalled);
  // The heal: h3's refutation reaches everyone a few milliseconds before h4's and h5's.
  c.heal();
  c.everyone_sees({0, 1, 2, 3}, {4, 5});
  c.run_for(milliseconds(5));
  c.everyone_sees(range(6));
  c.run_for(milliseconds(1000));
  for (size_t i = 0; i < 6; ++i) {
    CHECK(c.node(i).view().epoch() == 1);
    CHECK(c.node(i).status().phase == KeeperPhase::stable);
  }
  check_one_view_per_epoch(c);
}

TEST_CASE("a graceful leave changes the view without waiting for the settle window") {
  Config cfg;
  cfg.settle_quiet = milliseconds(400);
  KeeperCluster c(3, cfg);
  c.everyone_sees(range(3));
  c.run_for(milliseconds(1000));
  REQUIRE(c.node(0).view().epoch() == 1);
  const auto t0 = c.now();
  for (size_t i = 0; i < 3; ++i) c.set_gossip(i, {member(0), member(1), member(2, State::left)});
  c.run_for(milliseconds(50));
  CHECK(c.node(0).view().epoch() == 2);
  CHECK(c.node(1).view().size() == 2);
  CHECK(c.now() - t0 < cfg.settle_quiet);
}

TEST_CASE("a death on a confirmed refusal commits after settle_refused; a plain death waits settle_quiet") {
  Config cfg;
  cfg.settle_quiet = milliseconds(400);
  cfg.settle_refused = milliseconds(10);
  for (const bool refused : {true, false}) {
    CAPTURE(refused);
    KeeperCluster c(4, cfg);
    c.everyone_sees(range(4));
    c.run_for(milliseconds(1000));
    REQUIRE(c.node(0).view().epoch() == 1);
    const auto t0 = c.now();
    auto gone = member(3, State::dead);
    gone.refused = refused;
    c.crash(3);
    for (size_t i = 0; i < 3; ++i) c.set_gossip(i, {member(0), member(1), member(2), gone});
    c.run_for(milliseconds(100));
    CHECK((c.node(0).view().epoch() == 2) == refused);
    c.run_for(milliseconds(600));
    CHECK(c.node(0).view().epoch() == 2);
    CHECK(c.node(1).view().size() == 3);
    if (!refused) CHECK(c.now() - t0 >= cfg.settle_quiet);
  }
}

TEST_CASE("a joiner is admitted by the next view and keeps everyone's ranks in place") {
  KeeperCluster c(4);
  c.everyone_sees({0, 1, 2});
  c.run_for(milliseconds(300));
  REQUIRE(c.node(0).view().epoch() == 1);
  c.everyone_sees({0, 1, 2, 3});
  c.run_for(milliseconds(300));
  for (size_t i = 0; i < 4; ++i) {
    CHECK(c.node(i).view().epoch() == 2);
    CHECK(names(c.node(i).view()) == std::vector<std::string>{"h0", "h1", "h2", "h3"});
  }
  CHECK(c.node(3).view().find("h3")->join_epoch == 2);
  CHECK(c.node(3).view().find("h0")->join_epoch == 1);
  check_one_view_per_epoch(c);
}

TEST_CASE("a removed member is readmitted only after the hold-down") {
  Config cfg;
  cfg.hold_down = milliseconds(2000);
  KeeperCluster c(3, cfg);
  c.everyone_sees(range(3));
  c.run_for(milliseconds(300));
  c.everyone_sees({0, 1}, {2});
  c.run_for(milliseconds(300));
  REQUIRE(c.node(0).view().epoch() == 2);
  c.everyone_sees(range(3));  // back alive at once (a flapping link)
  c.run_for(milliseconds(1500));
  CHECK(c.node(0).view().epoch() == 2);
  c.run_for(milliseconds(1000));
  CHECK(c.node(0).view().epoch() == 3);
  CHECK(c.node(2).view().size() == 3);
  check_one_view_per_epoch(c);
}

TEST_CASE("a restarted member (new generation) replaces its old self at once") {
  KeeperCluster c(3);
  c.everyone_sees(range(3));
  c.run_for(milliseconds(300));
  std::vector<shoal::gossip::Member> restarted = {member(0), member(1), member(2, State::alive, 2)};
  c.set_gossip(0, restarted);
  c.set_gossip(1, restarted);
  c.run_for(milliseconds(300));
  CHECK(c.node(0).view().epoch() == 2);
  CHECK(c.node(0).view().find("h2")->generation == 2);
  CHECK(c.node(0).view().find("h2")->join_epoch == 2);
}

TEST_CASE("two members that both think they should propose still agree on one view per epoch") {
  Config cfg;
  cfg.takeover_after = milliseconds(0);  // everyone proposes as soon as a change is due
  KeeperCluster c(5, cfg);
  c.everyone_sees(range(5));
  c.run_for(milliseconds(500));
  c.everyone_sees({0, 1, 2, 3}, {4});
  c.run_for(milliseconds(2000));
  for (size_t i = 0; i < 4; ++i) CHECK(c.node(i).view().find("h4") == nullptr);
  check_one_view_per_epoch(c);
}

TEST_CASE("with two hosts a survivor stalls under the majority policy and continues under `any`") {
  for (const auto policy : {QuorumPolicy::majority, QuorumPolicy::any}) {
    Config cfg;
    cfg.policy = policy;
    KeeperCluster c(2, cfg);
    c.everyone_sees({0, 1});
    c.run_for(milliseconds(300));
    REQUIRE(c.node(0).view().epoch() == 1);
    c.crash(1);
    c.everyone_sees({0}, {1});
    c.run_for(milliseconds(1000));
    if (policy == QuorumPolicy::majority) {
      CHECK(c.node(0).view().epoch() == 1);
      CHECK(c.node(0).status().phase == KeeperPhase::stalled);
    } else {
      CHECK(c.node(0).view().epoch() == 2);
      CHECK(c.node(0).view().size() == 1);
    }
  }
}

TEST_CASE("an operator's force moves a stalled minority on") {
  KeeperCluster c(3);
  c.everyone_sees(range(3));
  c.run_for(milliseconds(300));
  c.crash(1);
  c.crash(2);
  c.everyone_sees({0}, {1, 2});
  c.run_for(milliseconds(500));
  REQUIRE(c.node(0).status().phase == KeeperPhase::stalled);
  KeeperOutput out;
  CHECK(c.node(0).force(c.now(), out).ok());
  CHECK(c.node(0).view().epoch() == 2);
  CHECK(c.node(0).view().size() == 1);
  KeeperOutput again;
  CHECK_FALSE(c.node(0).force(c.now(), again).ok());  // nothing left to force
}

TEST_CASE("garbage requests are refused and counted without changing anything") {
  KeeperCluster c(1);
  c.everyone_sees({0});
  c.run_for(milliseconds(100));
  const std::string junk = "\x08\x01garbage\xff\xff";
  KeeperOutput out;
  const auto resp = c.node(0).on_request(std::as_bytes(std::span(junk)), c.now(), out);
  CHECK(resp.empty());
  CHECK(c.node(0).stats().rejected.total() == 1);
  CHECK(c.node(0).view().epoch() == 1);
}

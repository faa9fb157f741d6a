// The committed-view keeper in the simulator: safety under seeded churn, one new view per crash or
// leave, one view for a rack that fails at once, the quorum policies' trade in a 2-member job, and a minority partition
// that cannot commit. Each test states its seed, scenario and property; gossip's invariants are checked after every
// event and ViewSafetyChecker judges every commit.
#include <doctest/doctest.h>

#include <set>

#include "base/log.hpp"
#include "scenario.hpp"
#include "sim_test_support.hpp"
#include "view_churn.hpp"
#include "view_layer.hpp"
#include "view_safety_checker.hpp"

using namespace shoal::sim;
using namespace shoal::sim::testing;
using shoal::membership::Config;
using shoal::membership::KeeperPhase;
using shoal::membership::QuorumPolicy;
using shoal::membership::View;
using shoal::membership::ViewMember;

namespace {

// Every simulated keeper logs each view it installs at info: keep the test output readable.
void quiet_logs() {
  if (auto spec = shoal::log::parse_spec("warn")) shoal::log::setup(*spec);
}

// A cluster of `n` members with view keepers, audited like the other simulator tests.
struct ViewCluster {
  ViewCluster(size_t n, uint64_t seed, Config cfg, Revival revival = Revival::never, size_t seed_count = 3)
      : keepers(cfg), checker(cfg.policy) {
    quiet_logs();
    keepers.track_accepts(true);
    keepers.add_observer(&checker);
    ClusterOptions o = small_cluster(n, seed, revival);
    o.seed_count = seed_count;
    o.layers = keepers.factory();
    cluster = std::make_unique<Cluster>(o);
  }
  Cluster& c() { return *cluster; }
  const View& view(uint32_t m) { return ViewKeepers::of(c(), m)->keeper().view(); }
  // Starts everyone and runs until all hold one view with all of them.
  bool form(Time limit) {
    c().start_all(c().now());
    return c().run_until(c().now() + limit, ms(10), [&] {
      return ViewSafetyChecker::converged(c()) && checker.latest().size() == c().size();
    });
  }
  std::string why() {
    if (!c().ok()) return *c().violation();
    return checker.findings().empty() ? "no finding" : checker.findings().front();
  }

  ViewKeepers keepers;
  ViewSafetyChecker checker;
  std::unique_ptr<Cluster> cluster;
};

bool holds(const View& v, const std::string& name) { return v.find(name) != nullptr; }

ViewMember vm(uint32_t i, uint64_t join_epoch = 1) {
  return ViewMember{member_name(i), member_name(i), member_addr(i), 8, join_epoch, 1};
}

}  // namespace

TEST_CASE(
    "1000 seeded churn runs over 3-7 members never commit two views for one epoch, never commit without a "
    "majority of the previous view, and converge on the live set (seeds 1..1000)") {
  quiet_logs();
  ViewChurnParams p;
  p.min_members = 3;
  p.max_members = 7;
  p.churn = sec(8);
  uint64_t divergences = 0, minority = 0, unconverged = 0, commits = 0, faults = 0, proposer_crashes = 0;
  for (uint64_t seed = 1; seed <= 1000; ++seed) {
    const ViewChurnResult r = run_view_churn(p, seed);
    INFO("seed " << seed << ": " << r.finding);
    REQUIRE(r.harness_ok);
    CHECK(r.divergences == 0);
    CHECK(r.minority_commits == 0);
    CHECK(r.unconverged == 0);
    divergences += r.divergences;
    minority += r.minority_commits;
    unconverged += r.unconverged;
    commits += r.commits;
    faults += r.faults;
    proposer_crashes += r.proposer_crashes;
  }
  CHECK(divergences + minority + unconverged == 0);
  // The runs did exercise the keepers: views changed and faults happened.
  CHECK(commits > 10000);
  CHECK(faults > 3000);
  CHECK(proposer_crashes > 50);
}

TEST_CASE("a crash yields one new view, with one hash, at every survivor (seed 41, 8 members, m3 crashes)") {
  Config cfg;
  cfg.min_hosts = 5;
  ViewCluster vc(8, 41, cfg);
  REQUIRE(vc.form(sec(30)));
  const uint64_t epoch = vc.view(0).epoch();
  const uint64_t commits = vc.checker.commits();
  vc.c().crash(3);
  const bool moved = vc.c().run_until(vc.c().now() + sec(10), ms(10), [&] {
    return ViewSafetyChecker::converged(vc.c());
  });
  INFO(vc.why());
  REQUIRE(vc.c().ok());
  CHECK(moved);
  std::set<uint64_t> hashes;
  for (uint32_t m = 0; m < 8; ++m) {
    if (m == 3) continue;
    const View& v = vc.view(m);
    CHECK(v.epoch() == epoch + 1);  // exactly one view change
    CHECK(v.size() == 7);
    CHECK(!holds(v, "m3"));
    hashes.insert(v.hash());
  }
  CHECK(hashes.size() == 1);
  CHECK(vc.checker.commits() - commits == 7);  // one commit per survivor, nothing more
  CHECK(vc.checker.divergences() + vc.checker.minority_commits() == 0);
}

TEST_CASE(
    "a rack that crashes at one instant is one view at every survivor (view-rack, 64 members, 16 at once, seeds 1-3)") {
  quiet_logs();
  ScenarioInputs in;
  in.n = 64;
  in.rack = 16;
  in.runs = 3;
  const ScenarioOutcome out = run_view_rack(in);
  INFO(out.error.value_or("no error"));
  REQUIRE_FALSE(out.error);
  const std::string figures = out.figures.str();
  INFO(figures);
  CHECK(figures.find("\"missed\":0") != std::string::npos);
  CHECK(figures.find("\"views_committed\":1,") != std::string::npos);
  in.rack = 32;  // not below half of the 64: the survivors would hold no majority
  CHECK(run_view_rack(in).error.has_value());
}

TEST_CASE("joiners arriving one a second join a 48-member view in windows, not one view each (view-joins, seeds 1-2)") {
  quiet_logs();
  ScenarioInputs in;
  in.n = 64;
  in.joiners = 16;
  in.runs = 2;
  in.join_window_ms = 0;  // off: every join its own view
  ScenarioOutcome out = run_view_joins(in);
  INFO(out.error.value_or("no error"));
  REQUIRE_FALSE(out.error);
  std::string figures = out.figures.str();
  INFO(figures);
  CHECK(figures.find("\"missed\":0") != std::string::npos);
  CHECK(figures.find("\"views_committed\":16,") != std::string::npos);
  in.join_window_ms = 10000;  // the default: joins over 15 s in at most 3 views
  out = run_view_joins(in);
  REQUIRE_FALSE(out.error);
  figures = out.figures.str();
  CHECK(figures.find("\"missed\":0") != std::string::npos);
  const auto at = figures.find("\"views_committed\":");
  REQUIRE(at != std::string::npos);
  const int views = std::stoi(figures.substr(at + 18));
  CHECK(views >= 2);
  CHECK(views <= 3);
  in.joiners = 32;  // not below half of the 64: the first view would lack its --min-hosts
  CHECK(run_view_joins(in).error.has_value());
}

TEST_CASE("a graceful leave yields one new view without the leaver at every survivor (seed 43, 8 members, m5)") {
  Config cfg;
  cfg.min_hosts = 5;
  ViewCluster vc(8, 43, cfg);
  REQUIRE(vc.form(sec(30)));
  const uint64_t epoch = vc.view(0).epoch();
  const Time t0 = vc.c().now();
  vc.c().leave(5);
  const bool moved = vc.c().run_until(t0 + sec(5), ms(1), [&] {
    for (uint32_t m = 0; m < 8; ++m) {
      if (m != 5 && (vc.view(m).epoch() != epoch + 1 || holds(vc.view(m), "m5"))) return false;
    }
    return true;
  });
  INFO(vc.why());
  REQUIRE(vc.c().ok());
  CHECK(moved);
  // A leave needs no failure detection and no settle window: well under a second.
  CHECK(vc.c().now() - t0 < ms(500));
  CHECK(vc.view(0).hash() == vc.view(7).hash());
  vc.c().run_until(vc.c().now() + sec(2));
  CHECK(ViewSafetyChecker::converged(vc.c()));
  CHECK(vc.view(1).epoch() == epoch + 1);
  CHECK(vc.checker.divergences() + vc.checker.minority_commits() == 0);
}

TEST_CASE("a 2-member job stalls after its peer crashes under majority, and continues alone under any (seed 47)") {
  for (const QuorumPolicy policy : {QuorumPolicy::majority, QuorumPolicy::any}) {
    const bool majority = policy == QuorumPolicy::majority;
    CAPTURE(majority);
    Config cfg;
    cfg.min_hosts = 1;
    cfg.policy = policy;
    ViewCluster vc(2, 47, cfg);
    REQUIRE(vc.form(sec(30)));
    const uint64_t epoch = vc.view(0).epoch();
    vc.c().crash(1);
    vc.c().run_until(vc.c().now() + sec(20));
    INFO(vc.why());
    REQUIRE(vc.c().ok());
    const auto& keeper = ViewKeepers::of(vc.c(), 0)->keeper();
    if (majority) {
      CHECK(keeper.view().epoch() == epoch);
      CHECK(keeper.status().phase == KeeperPhase::stalled);
      CHECK(keeper.status().reason.find("majority lost") != std::string::npos);
    } else {
      CHECK(keeper.view().epoch() == epoch + 1);
      CHECK(keeper.view().size() == 1);
      CHECK(keeper.status().phase == KeeperPhase::stable);
    }
  }
}

TEST_CASE("a 2|split never diverges under majority, and does under any, the documented trade (seeds 61..70)") {
  quiet_logs();
  for (uint64_t seed = 61; seed <= 70; ++seed) {
    CAPTURE(seed);
    const PairSplitResult safe = run_pair_split(QuorumPolicy::majority, seed);
    INFO(safe.finding);
    REQUIRE(safe.harness_ok);
    REQUIRE(safe.formed);
    CHECK(!safe.either_moved);
    CHECK(safe.divergences == 0);
    CHECK(safe.rejoined);
    const PairSplitResult risky = run_pair_split(QuorumPolicy::any, seed);
    REQUIRE(risky.harness_ok);
    REQUIRE(risky.formed);
    CHECK(risky.either_moved);
    CHECK(risky.divergences > 0);
  }
}

TEST_CASE(
    "a minority partition never commits while the majority side moves on without it "
    "(seed 53, 7 members, {m0, m1} | {m2..m6}, the designated proposer in the minority)") {
  Config cfg;
  cfg.min_hosts = 3;
  cfg.hold_down = sec(1);
  ViewCluster vc(7, 53, cfg, Revival::by_refutation);
  REQUIRE(vc.form(sec(30)));
  const uint64_t epoch = vc.view(0).epoch();
  vc.c().network().partition({{0, 1}, {2, 3, 4, 5, 6}});
  const bool majority_moved = vc.c().run_until(vc.c().now() + sec(20), ms(10), [&] {
    for (uint32_t m = 2; m < 7; ++m) {
      if (vc.view(m).size() != 5) return false;
    }
    return true;
  });
  INFO(vc.why());
  REQUIRE(vc.c().ok());
  CHECK(majority_moved);
  vc.c().run_until(vc.c().now() + sec(10));
  for (uint32_t m : {0u, 1u}) {
    CHECK(vc.view(m).epoch() == epoch);
    CHECK(ViewKeepers::of(vc.c(), m)->keeper().status().phase == KeeperPhase::stalled);
  }
  CHECK(!holds(vc.view(2), "m0"));
  CHECK(vc.checker.minority_commits() == 0);
  CHECK(vc.checker.divergences() == 0);
  // After the heal the minority is readmitted (after its hold-down) and everyone agrees again.
  vc.c().network().heal();
  const bool merged = vc.c().run_until(vc.c().now() + sec(30), ms(10), [&] {
    return ViewSafetyChecker::converged(vc.c()) && vc.checker.latest().size() == 7;
  });
  CHECK(merged);
  CHECK(vc.checker.divergences() == 0);
}

TEST_CASE("the safety checker counts a second view for an epoch and a commit without a majority (synthetic)") {
  ViewSafetyChecker checker(QuorumPolicy::majority);
  constexpr uint64_t kLineage = 5;
  const View v1 = *View::make(1, {vm(0), vm(1), vm(2), vm(3), vm(4)}, kLineage);
  const View v2 = *View::make(2, {vm(0), vm(1), vm(2), vm(3)}, kLineage);
  const View v2b = *View::make(2, {vm(0), vm(1), vm(2)}, kLineage);
  for (uint32_t m = 0; m < 5; ++m) checker.on_commit(m, 1, v1, sec(1));
  // m0 proposes v2 and hears ACCEPTED from m1 and m2: with its own vote, 3 of 5.
  checker.on_accepted(0, 1, 1, 2, v2.hash(), sec(2));
  checker.on_accepted(0, 2, 1, 2, v2.hash(), sec(2));
  checker.on_commit(0, 1, v2, sec(2));
  CHECK(checker.minority_commits() == 0);
  CHECK(checker.divergences() == 0);
  // Another member commits a different view for epoch 2 having heard only one voter: both rules break.
  checker.on_accepted(4, 3, 1, 2, v2b.hash(), sec(3));
  checker.on_commit(4, 1, v2b, sec(3));
  CHECK(checker.divergences() == 1);
  // Epoch 3 first committed by m3 with a single acceptance (m1) plus its own: 2 of 4.
  const View v3 = *View::make(3, {vm(0), vm(1), vm(3)}, kLineage);
  checker.on_accepted(3, 1, 1, 3, v3.hash(), sec(4));
  checker.on_commit(3, 1, v3, sec(4));
  CHECK(checker.minority_commits() == 1);
  CHECK(checker.findings().size() == 2);
  // A view of another lineage (a cluster that formed again beside this one) diverges from it.
  const View v4 = *View::make(4, {vm(0), vm(1), vm(3)}, kLineage + 1);
  checker.on_accepted(0, 1, 1, 4, v4.hash(), sec(5));
  checker.on_accepted(0, 3, 1, 4, v4.hash(), sec(5));
  checker.on_commit(0, 1, v4, sec(5));
  CHECK(checker.divergences() == 2);
  CHECK(checker.findings().size() == 3);
}

TEST_CASE("a churn run replays exactly from its seed (seed 7)") {
  quiet_logs();
  ViewChurnParams p;
  const ViewChurnResult a = run_view_churn(p, 7);
  const ViewChurnResult b = run_view_churn(p, 7);
  CHECK(a.trace_hash == b.trace_hash);
  CHECK(a.commits == b.commits);
  CHECK(a.faults == b.faults);
  CHECK(a.commits > 0);
}

TEST_CASE(
    "a run that ends with a majority of the newest view dead stalls, and an operator's force at a survivor "
    "outside that view brings every live member into one view (seed 52)") {
  // Seed 52: the run ends with a majority of its newest view (epoch 2) crashed; the rule demands a
  // stall, and the force at a survivor commits epoch 3. (Seed 301 showed this until gossip began
  // verifying unconfirmed suspicions, which changed every churn trace; 52 is the first seed that
  // shows it now, found with `shoal-sim view-safety --seed S --seeds 1`.)
  quiet_logs();
  ViewChurnParams p;
  const ViewChurnResult r = run_view_churn(p, 52);
  INFO(r.finding);
  REQUIRE(r.harness_ok);
  CHECK(r.majority_lost_stalls == 1);
  CHECK(r.divergences == 0);
  CHECK(r.minority_commits == 0);
  CHECK(r.unconverged == 0);
  CHECK(r.final_epoch == 3);
}

TEST_CASE(
    "a joiner stays in the views when the proposer that admitted it dies before its news spread (seed 61, "
    "6 members and a joiner)") {
  // m0 proposes (the smallest name). m6 joins with m0 as its only seed while m1 hears no datagram (its
  // streams work, so probes of and by it succeed over TCP): m1 learns of m6 only from the view that
  // admits it. m0 crashes the moment m1 installs that view, so m1 proposes next. The view vouches for m6
  // at m1; without that, m1's next view left the live m6 out and the hold-down kept it out for 10 s (as
  // seen on loopback under load; with this seed, before the vouching, at epoch 3).
  Config cfg;
  cfg.min_hosts = 4;
  ViewCluster vc(6, 61, cfg, Revival::never, 1);
  REQUIRE(vc.form(sec(30)));
  const uint32_t joiner = vc.c().add_member();
  REQUIRE(joiner == 6);
  vc.c().network().deafen(1);

  struct Watch : ViewObserver {
    Cluster* c = nullptr;
    bool crashed = false;
    std::optional<bool> m1_knew_m6;  // m1's gossip held m6 when it installed the view admitting m6
    std::vector<uint64_t> without_m6;  // epochs committed after m6's admission that leave it out
    uint64_t admitted = 0;
    void on_commit(uint32_t member, uint64_t, const View& v, Time) override {
      const bool has = v.find("m6") != nullptr;
      if (admitted != 0 && !has && v.epoch() > admitted &&
          std::find(without_m6.begin(), without_m6.end(), v.epoch()) == without_m6.end()) {
        without_m6.push_back(v.epoch());
      }
      if (member != 1 || !has || crashed) return;
      crashed = true;
      admitted = v.epoch();
      m1_knew_m6 = c->core(1)->find("m6").has_value();
      c->at(c->now(), [c = c] { c->crash(0); });
    }
  } watch;
  watch.c = &vc.c();
  vc.keepers.add_observer(&watch);
  vc.c().start(joiner, vc.c().now());
  const bool settled = vc.c().run_until(vc.c().now() + sec(30), ms(10), [&] {
    if (!watch.crashed) return false;
    for (uint32_t m = 1; m <= 6; ++m) {
      const View& v = vc.view(m);
      if (holds(v, "m0") || !holds(v, "m6") || v.size() != 6) return false;
    }
    return true;
  });
  INFO(vc.why());
  REQUIRE(vc.c().ok());
  REQUIRE(watch.m1_knew_m6.has_value());
  CHECK_FALSE(*watch.m1_knew_m6);  // the scenario happened: m1 knew of m6 only through the view
  CHECK(settled);
  CHECK(watch.without_m6.empty());  // no view left the live joiner out
  // m1 hears datagrams again: nothing changes.
  vc.c().network().heal();
  const uint64_t epoch = vc.view(1).epoch();
  vc.c().run_until(vc.c().now() + sec(5), ms(10), [] { return false; });
  REQUIRE(vc.c().ok());
  for (uint32_t m = 1; m <= 6; ++m) CHECK(vc.view(m).epoch() == epoch);
  CHECK(watch.without_m6.empty());
  CHECK(vc.checker.divergences() + vc.checker.minority_commits() == 0);
}

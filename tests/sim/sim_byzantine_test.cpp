// A key holder that is a member forges view agreement (forging_layer.hpp): COMMITs of epoch 2^64-1, of
// 2^40, of member lists without the real hosts under its own name and under a real member's, from outside
// both views, a jump of seven epochs, of a view of only itself and the receiver, prepares of ballot round
// 2^64-1, and lies to every catch-up query (to a joiner: a view of itself and the joiner).
// Property, checked on every commit: one view per epoch (no divergence), every commit backed by a majority
// of the view before, no honest member ever holds a view with a member that does not exist or an epoch
// far ahead; and the honest members keep committing: a crash is followed by a view without the crashed
// member, and its restart (a joiner, with no view to ask, cut off with the forger alone for 3 s) by a view
// with it.
#include <doctest/doctest.h>

#include "base/log.hpp"
#include "forging_layer.hpp"
#include "sim_test_support.hpp"
#include "view_layer.hpp"
#include "view_safety_checker.hpp"

using namespace shoal::sim;
using namespace shoal::sim::testing;
using shoal::membership::Config;
using shoal::membership::View;
using shoal::membership::ViewRefusal;

namespace {

constexpr uint32_t kMembers = 6;
constexpr uint32_t kForger = 5;  // not the smallest name: the designated proposer is honest

// Counts, at the honest members, every commit of a view naming a member that does not exist or an epoch
// no honest cluster reaches in a test.
struct ForgeryWatch : ViewObserver {
  void on_commit(uint32_t member, uint64_t, const View& v, Time) override {
    if (member == kForger) return;
    ++commits;
    bool stranger = v.epoch() > 1000;
    for (const auto& m : v.members()) stranger = stranger || m.name.rfind("stranger", 0) == 0;
    if (stranger && first.empty()) first = "m" + std::to_string(member) + " installed " + v.to_string();
    installed_forgeries += stranger ? 1 : 0;
  }
  uint64_t commits = 0;
  uint64_t installed_forgeries = 0;
  std::string first;
};

uint64_t refused_at_honest(Cluster& c, ViewRefusal why) {
  uint64_t n = 0;
  for (uint32_t m = 0; m < kMembers; ++m) {
    if (m == kForger) continue;
    if (ViewLayer* l = ViewKeepers::of(c, m)) n += l->keeper().stats().refused[static_cast<size_t>(why)];
  }
  return n;
}

bool all_hold(Cluster& c, const std::function<bool(const View&)>& ok) {
  for (uint32_t m = 0; m < kMembers; ++m) {
    const auto s = c.status(m);
    if (s != MemberStatus::running && s != MemberStatus::paused) continue;
    ViewLayer* l = ViewKeepers::of(c, m);
    if (l == nullptr || !ok(l->keeper().view())) return false;
  }
  return true;
}

}  // namespace

TEST_CASE(
    "a forging member cannot install a view, wrap an epoch or stop the others (seed 71, 6 members, m5 forges "
    "every 100 ms; m2 crashes and restarts cut off with the forger)") {
  if (auto spec = shoal::log::parse_spec("error")) shoal::log::setup(*spec);
  Config cfg;
  cfg.min_hosts = 3;
  cfg.hold_down = sec(1);
  ViewKeepers keepers(cfg);
  keepers.track_accepts(true);
  ViewSafetyChecker checker(cfg.policy);
  ForgeryWatch watch;
  keepers.add_observer(&checker);
  keepers.add_observer(&watch);
  ClusterOptions o = small_cluster(kMembers, 71, Revival::by_refutation);
  o.seed_count = kMembers;  // a restarted member can join gossip through the forger alone
  o.layers = keepers.factory();
  Cluster c(o);
  keepers.replace(kForger, [&c](uint32_t member, const Config& cfg_, const shoal::gossip::Identity& self, uint64_t seed,
                                const std::vector<ViewObserver*>& observers, bool track, Time coalesce) {
    return std::make_unique<ForgingLayer>(member, cfg_, self, seed, observers, track, coalesce, kMembers, ms(100),
                                          [&c](uint32_t m) { return uint64_t{c.generation(m)}; });
  });
  c.start_all(Time(0));
  REQUIRE(c.run_until(sec(30), ms(10), [&] {
    return ViewSafetyChecker::converged(c) && checker.latest().size() == kMembers;
  }));
  const uint64_t formed = checker.latest().epoch();
  auto* forger = dynamic_cast<ForgingLayer*>(ViewKeepers::of(c, kForger));
  REQUIRE(forger != nullptr);

  // Five seconds of forgery against a stable cluster: nothing changes, every kind is refused and counted.
  c.run_until(c.now() + sec(5));
  INFO(watch.first);
  REQUIRE(c.ok());
  CHECK(checker.latest().epoch() == formed);
  for (uint8_t k = 0; k < ForgingLayer::kinds_; ++k) CHECK(forger->sent()[k] > 0);
  CHECK(refused_at_honest(c, ViewRefusal::epoch_overflow) > 0);
  CHECK(refused_at_honest(c, ViewRefusal::epoch_jump) > 0);
  CHECK(refused_at_honest(c, ViewRefusal::outsider) > 0);
  CHECK(refused_at_honest(c, ViewRefusal::unconfirmed) > 0);
  CHECK(refused_at_honest(c, ViewRefusal::ballot) > 0);
  CHECK(forger->lies() > 0);

  // The honest members keep committing: a crash, then the crashed member's restart (a joiner).
  c.crash(2);
  const bool removed = c.run_until(c.now() + sec(20), ms(10), [&] {
    return all_hold(c, [](const View& v) { return v.find(member_name(2)) == nullptr && v.size() == kMembers - 1; });
  });
  CHECK(removed);
  // m2 restarts (a joiner: no view to ask) cut off from everyone but the forger, which feeds it views of
  // the two of them and vouches for them; then the cut heals and the cluster takes both back.
  c.network().partition({{2, kForger}, {0, 1, 3, 4}});
  c.restart(2);
  const uint64_t pairs_before = forger->sent()[ForgingLayer::pair];
  const uint64_t lies_before = forger->lies();
  c.run_until(c.now() + sec(3));
  CHECK(forger->sent()[ForgingLayer::pair] > pairs_before);
  CHECK(forger->lies() > lies_before);
  CHECK(ViewKeepers::of(c, 2)->keeper().view().epoch() == 0);
  c.network().heal();
  const bool readmitted = c.run_until(c.now() + sec(30), ms(10), [&] {
    return ViewSafetyChecker::converged(c) && checker.latest().size() == kMembers;
  });
  CHECK(readmitted);
  forger->stop();
  c.run_until(c.now() + sec(5));
  const std::string finding = checker.findings().empty() ? std::string("no finding") : checker.findings().front();
  INFO(finding);
  CHECK(c.ok());
  CHECK(checker.check_converged(c));
  CHECK(checker.divergences() == 0);
  CHECK(checker.minority_commits() == 0);
  CHECK(watch.installed_forgeries == 0);
  CHECK(watch.commits > 0);
  CHECK(checker.latest().epoch() < formed + 10);
}

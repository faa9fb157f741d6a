// Eviction by agreement (node health, opt-in): the rule (continuous verdict, one per window, cleared verdict
// cancels, stale or foreign verdicts ignored), desired_view's --min-hosts bound, the flap damper's eviction
// hold-down, and keepers committing (or refusing) a view that evicts a straggler.
#include <doctest/doctest.h>

#include <algorithm>

#include "keeper_cluster.hpp"
#include "membership/desired_view.hpp"
#include "membership/eviction.hpp"

using namespace shoal::membership;
using namespace shoal::membership::testing;
using shoal::gossip::State;

namespace {

constexpr Time kSecond{1'000'000};

View view_of(uint64_t epoch, std::vector<size_t> idx) {
  std::vector<ViewMember> ms;
  for (size_t i : idx) ms.push_back(ViewMember{name_of(i), "host" + std::to_string(i), addr_of(i), 2, 1, 1});
  return View::make(epoch, ms).value();
}

EvictionConfig on(Time after = 5 * kSecond, Time window = 60 * kSecond, Time hold = 60 * kSecond) {
  return EvictionConfig{true, after, window, hold};
}

// Reports the same verdict every half second from `from` to `to` (the trainer's exchange cadence).
void report(Eviction& e, const View& v, const std::vector<std::string>& named, Time from, Time to) {
  for (Time t = from; t <= to; t += kSecond / 2) e.on_verdict(v.epoch(), named, 10, v.epoch(), t);
}

}  // namespace

TEST_CASE("a member named without a break for evict-after is the one to evict, and not before") {
  const View v = view_of(3, {0, 1, 2, 3});
  Eviction e(on());
  e.on_install(v, Time(0));
  report(e, v, {"h2"}, kSecond, 5 * kSecond);
  CHECK_FALSE(e.candidate(v, 5 * kSecond).has_value());  // named 4 s so far
  CHECK(e.next_due(v, 5 * kSecond) == std::optional<Time>(6 * kSecond));
  report(e, v, {"h2"}, 5 * kSecond + kSecond / 2, 6 * kSecond);
  CHECK(e.candidate(v, 6 * kSecond) == std::optional<std::string>("h2"));
}

TEST_CASE("a verdict that stops naming the member cancels it: the time starts again") {
  const View v = view_of(3, {0, 1, 2, 3});
  Eviction e(on());
  e.on_install(v, Time(0));
  report(e, v, {"h2"}, kSecond, 5 * kSecond);
  e.on_verdict(3, {}, 11, 3, 5 * kSecond + kSecond / 2);  // cleared once
  report(e, v, {"h2"}, 6 * kSecond, 10 * kSecond);
  CHECK_FALSE(e.candidate(v, 10 * kSecond).has_value());
  report(e, v, {"h2"}, 10 * kSecond + kSecond / 2, 11 * kSecond);
  CHECK(e.candidate(v, 11 * kSecond) == std::optional<std::string>("h2"));
}

TEST_CASE("off, a verdict about another epoch, or one gone stale evicts nobody") {
  const View v = view_of(3, {0, 1, 2, 3});
  {
    Eviction off(EvictionConfig{});
    off.on_install(v, Time(0));
    report(off, v, {"h2"}, kSecond, 20 * kSecond);
    CHECK_FALSE(off.candidate(v, 20 * kSecond).has_value());
    CHECK_FALSE(off.agrees({"h2"}));
  }
  {
    Eviction e(on());
    e.on_install(v, Time(0));
    for (Time t = kSecond; t <= 20 * kSecond; t += kSecond) e.on_verdict(2, {"h2"}, 10, 3, t);  // figures of epoch 2
    CHECK_FALSE(e.candidate(v, 20 * kSecond).has_value());
    CHECK_FALSE(e.agrees({"h2"}));
  }
  {
    Eviction e(on());
    e.on_install(v, Time(0));
    report(e, v, {"h2"}, kSecond, 2 * kSecond);  // then the trainer stops reporting
    CHECK_FALSE(e.candidate(v, 2 * kSecond + kVerdictMaxAge + kSecond).has_value());
  }
  {
    // Named, but no longer a member of the view: nothing to evict.
    Eviction e(on());
    e.on_install(v, Time(0));
    report(e, v, {"h9"}, kSecond, 10 * kSecond);
    CHECK_FALSE(e.candidate(v, 10 * kSecond).has_value());
  }
}

TEST_CASE("at most one eviction per window, counted from the view that evicted") {
  const View before = view_of(3, {0, 1, 2, 3, 4});
  std::vector<ViewMember> rest;
  for (size_t i : {0, 1, 3, 4}) rest.push_back(ViewMember{name_of(i), "host" + std::to_string(i), addr_of(i), 2, 1, 1});
  const View after = View::make(4, rest, 0, {"h2"}).value();
  Eviction e(on(5 * kSecond, 60 * kSecond));
  e.on_install(before, Time(0));
  e.on_install(after, 10 * kSecond);
  report(e, after, {"h3"}, 11 * kSecond, 40 * kSecond);
  CHECK_FALSE(e.candidate(after, 40 * kSecond).has_value());
  CHECK(e.next_due(after, 40 * kSecond) == std::optional<Time>(70 * kSecond));
  report(e, after, {"h3"}, 40 * kSecond + kSecond / 2, 70 * kSecond);
  CHECK(e.candidate(after, 70 * kSecond) == std::optional<std::string>("h3"));
}

TEST_CASE("a failed round that evicted holds the next eviction off for evict-after") {
  const View v = view_of(3, {0, 1, 2, 3});
  Eviction e(on());
  e.on_install(v, Time(0));
  report(e, v, {"h2"}, kSecond, 7 * kSecond);
  REQUIRE(e.candidate(v, 7 * kSecond).has_value());
  e.round_failed(7 * kSecond);
  report(e, v, {"h2"}, 7 * kSecond + kSecond / 2, 11 * kSecond);
  CHECK_FALSE(e.candidate(v, 11 * kSecond).has_value());
  report(e, v, {"h2"}, 11 * kSecond + kSecond / 2, 12 * kSecond);
  CHECK(e.candidate(v, 12 * kSecond).has_value());
}

TEST_CASE("an acceptor agrees only to evict what its own verdict named in its committed epoch") {
  const View v = view_of(3, {0, 1, 2, 3});
  Eviction e(on());
  e.on_install(v, Time(0));
  CHECK_FALSE(e.agrees({"h2"}));
  e.on_verdict(3, {"h2"}, 10, 3, kSecond);
  e.on_verdict(3, {}, 15, 3, 2 * kSecond);  // cleared since: it named h2 in this epoch all the same
  CHECK(e.agrees({"h2"}));
  CHECK_FALSE(e.agrees({"h1"}));
  CHECK(e.first_named_step("h2") == 10);
  e.on_install(view_of(4, {0, 1, 2, 3}), 3 * kSecond);  // a new view: its own figures decide
  CHECK_FALSE(e.agrees({"h2"}));
}

TEST_CASE("desired_view leaves the straggler out, but never below --min-hosts") {
  FlapDamper damper;
  const auto gossip = std::vector{member(0), member(1), member(2), member(3)};
  damper.observe(gossip, Time(0));
  const View v = view_of(3, {0, 1, 2, 3});
  Config cfg;
  cfg.min_hosts = 3;
  {
    const Desired d = desired_view(v, gossip, damper, cfg, Time(0), std::string("h2"));
    CHECK(d.differs);
    CHECK(d.evicted == std::optional<std::string>("h2"));
    CHECK(d.members.size() == 3);
    CHECK(std::none_of(d.members.begin(), d.members.end(), [](const ViewMember& m) { return m.name == "h2"; }));
    CHECK(d.majority_live);
    CHECK(d.blocked.empty());
  }
  cfg.min_hosts = 4;
  {
    const Desired d = desired_view(v, gossip, damper, cfg, Time(0), std::string("h2"));
    CHECK_FALSE(d.differs);
    CHECK_FALSE(d.evicted.has_value());
    CHECK(d.evict_blocked.find("--min-hosts") != std::string::npos);
  }
  cfg.min_hosts = 3;
  {
    // Another member died meanwhile: removing it and the straggler would leave two.
    const auto with_dead = std::vector{member(0), member(1), member(2), member(3, State::dead)};
    const Desired d = desired_view(v, with_dead, damper, cfg, Time(0), std::string("h2"));
    CHECK_FALSE(d.evicted.has_value());
    CHECK(d.members.size() == 3);
  }
}

TEST_CASE("an evicted member waits out the eviction hold-down, even as a new generation") {
  FlapDamper damper;
  const Time hold = 10 * kSecond;
  damper.observe({member(2)}, Time(0));
  damper.removed("h2", 1, kSecond, 60 * kSecond);
  CHECK_FALSE(damper.eligible("h2", 1, 30 * kSecond, hold));
  CHECK(damper.eligible("h2", 1, 61 * kSecond, hold));
  damper.observe({member(2, State::alive, 2)}, 5 * kSecond);  // restarted: a new process
  CHECK_FALSE(damper.eligible("h2", 2, 30 * kSecond, hold));
  CHECK(damper.eligible("h2", 2, 65 * kSecond, hold));
  CHECK(damper.evicted_until("h2") == std::optional<Time>(61 * kSecond));
  // An ordinary removal: a new generation is admitted at once.
  damper.removed("h1", 1, kSecond);
  damper.observe({member(1, State::alive, 2)}, 2 * kSecond);
  CHECK(damper.eligible("h1", 2, 2 * kSecond, hold));
}

TEST_CASE("keepers whose verdicts all name a straggler commit a view without it, and it stays out for the hold-down") {
  Config cfg;
  cfg.min_hosts = 3;
  cfg.eviction = on(2 * kSecond, 60 * kSecond, 20 * kSecond);
  KeeperCluster c(5, cfg);
  c.everyone_sees({0, 1, 2, 3, 4});
  c.run_for(2 * kSecond);
  REQUIRE(c.node(0).view().size() == 5);
  const uint64_t epoch = c.node(0).view().epoch();
  // Every trainer's verdict names h3 (the same figures on every rank), reported every half second.
  for (int i = 0; i < 8; ++i) {
    for (size_t n = 0; n < c.size(); ++n) {
      KeeperOutput out;
      c.node(n).on_verdict(epoch, {"h3"}, 10 + static_cast<uint64_t>(i) * 5, c.now(), out);
      REQUIRE(out.requests.empty());  // nobody proposes before evict-after (2 s)
    }
    c.run_for(kSecond / 4);
  }
  for (int i = 0; i < 8; ++i) {
    for (size_t n = 0; n < c.size(); ++n) c.feed_verdict(n, epoch, {"h3"}, 50);
    c.run_for(kSecond / 2);
  }
  for (size_t n = 0; n < c.size(); ++n) {
    INFO("node " << n);
    const View& v = c.node(n).view();
    CHECK(v.epoch() == epoch + 1);
    CHECK(v.size() == 4);
    CHECK(v.find("h3") == nullptr);
    CHECK(v.evicts("h3"));
    CHECK(c.node(n).status().evictions == 1);
  }
  REQUIRE(c.node(3).status().evicted.has_value());
  CHECK(c.node(3).status().evicted->epoch == epoch + 1);
  CHECK(c.node(3).status().reason.find("evicted as a straggler") != std::string::npos);
  CHECK_FALSE(c.node(0).status().evicted.has_value());
  // h3 is alive and asks to join all along: not readmitted before the hold-down (20 s)...
  c.everyone_sees({0, 1, 2, 3, 4});
  c.run_for(15 * kSecond);
  CHECK(c.node(0).view().find("h3") == nullptr);
  // ...then readmitted through the ordinary join path.
  c.run_for(10 * kSecond);
  CHECK(c.node(0).view().find("h3") != nullptr);
  CHECK(c.node(0).view().epoch() == epoch + 2);
  CHECK_FALSE(c.node(3).status().evicted.has_value());
}

TEST_CASE("a survivor whose own verdict never named the straggler refuses the eviction: nothing is committed") {
  Config cfg;
  cfg.min_hosts = 3;
  cfg.eviction = on(2 * kSecond, 60 * kSecond, 20 * kSecond);
  KeeperCluster c(5, cfg);
  c.everyone_sees({0, 1, 2, 3, 4});
  c.run_for(2 * kSecond);
  const uint64_t epoch = c.node(0).view().epoch();
  // A verdict forged or wrong on h0 (the designated proposer) only: the others' verdicts name nobody.
  for (int i = 0; i < 20; ++i) {
    c.feed_verdict(0, epoch, {"h3"}, 50);
    for (size_t n = 1; n < c.size(); ++n) c.feed_verdict(n, epoch, {}, 50);
    c.run_for(kSecond / 2);
  }
  for (size_t n = 0; n < c.size(); ++n) {
    CHECK(c.node(n).view().epoch() == epoch);
    CHECK(c.node(n).view().size() == 5);
  }
  // The membership still moves for everything else: a real failure is committed as usual.
  c.crash(4);
  c.everyone_sees({0, 1, 2, 3}, {4});
  c.run_for(3 * kSecond);
  CHECK(c.node(1).view().epoch() == epoch + 1);
  CHECK(c.node(1).view().find("h4") == nullptr);
  CHECK(c.node(1).view().find("h3") != nullptr);
}

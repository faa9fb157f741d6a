// The refusal rule (src/gossip/README.md, "Evidence from the data plane") in the simulator: a killed
// member's port refuses and it dies sooner; a powered-off host refuses nothing and keeps the normal
// path; under loss, stalls, and kills with restarts at the same address, no live member is removed,
// and no death on refusal ever names a live generation. Each test states its seed and scenario.
#include <doctest/doctest.h>

#include <optional>

#include "rng.hpp"
#include "sim_test_support.hpp"

using namespace shoal::sim;
using namespace shoal::sim::testing;
using shoal::gossip::State;

namespace {

// Dead announcements about a generation that is up (running or paused) when announced; those
// declared by the refusal rule are counted apart. `spared` members (paused ones) count only there.
struct LiveRemovals : ClusterObserver {
  explicit LiveRemovals(Cluster& c) : cluster(c), spared(c.size(), 0) { c.add_observer(this); }
  void on_member_event(uint32_t observer, uint32_t subject, const shoal::gossip::MemberEvent& e, Time now) override {
    if (e.member.state != State::dead) return;
    const MemberStatus s = cluster.status(subject);
    const bool up = s == MemberStatus::running || s == MemberStatus::paused;
    if (!up || e.member.id.generation != cluster.generation(subject)) return;  // a previous life
    if (e.member.refused) ++by_refusal;
    if (!spared[subject]) ++removals;
    if (first.empty()) first = member_name(observer) + " declared " + e.member.id.name + " dead at " + format_time(now);
  }
  Cluster& cluster;
  std::vector<uint8_t> spared;
  uint64_t removals = 0, by_refusal = 0;
  std::string first;
};

uint64_t refusal_deaths(Cluster& c) {
  uint64_t sum = 0;
  for (uint32_t m = 0; m < c.size(); ++m) {
    if (auto* core = c.core(m)) sum += core->stats().deaths_on_refusal;
  }
  return sum;
}

// Kills a random running member every `every`, and restarts it (same address, next generation)
// 100-900 ms later, until `end`.
void kill_and_restart(Cluster& c, SimRng& rng, Time every, Time end) {
  std::function<void()> next = [&c, &rng, every, end, &next] {
    std::vector<uint32_t> running;
    for (uint32_t m = 0; m < c.size(); ++m) {
      if (c.status(m) == MemberStatus::running) running.push_back(m);
    }
    if (!running.empty()) {
      const uint32_t victim = running[rng.below(running.size())];
      c.crash(victim);
      c.at(c.now() + ms(100 + static_cast<int64_t>(rng.below(800))), [&c, victim] { c.restart(victim); });
    }
    if (c.now() + every < end) c.at(c.now() + every, next);
  };
  c.at(c.now() + every, next);
  c.run_until(end);
}

}  // namespace

TEST_CASE("a killed member (its port refuses) is dead everywhere sooner than a powered-off host (seed 71, 16 members)") {
  Time killed_after{0}, silent_after{0};
  for (const bool silent : {false, true}) {
    CAPTURE(silent);
    Cluster c(small_cluster(16, 71));
    REQUIRE(start_and_converge(c, sec(30)));
    LiveRemovals live(c);
    const Time at = c.now();
    silent ? c.power_off(5) : c.crash(5);
    const bool seen = c.run_until(at + sec(5), ms(1), [&] { return everyone_shows(c, 5, State::dead); });
    INFO(c.violation().value_or("no violation"));
    REQUIRE(c.ok());
    REQUIRE(seen);
    (silent ? silent_after : killed_after) = c.now() - at;
    CHECK(live.removals == 0);
    CHECK((refusal_deaths(c) > 0) == !silent);
  }
  MESSAGE("killed: dead everywhere after " << killed_after.count() / 1000 << " ms; silent: "
                                           << silent_after.count() / 1000 << " ms");
  CHECK(killed_after < silent_after);
}

TEST_CASE("hinted by two trainers, a killed member is dead within 30 ms, below the normal floor (seed 72, 16 members)") {
  Cluster c(small_cluster(16, 72));
  REQUIRE(start_and_converge(c, sec(30)));
  std::optional<Time> first_dead;
  EventTap tap;
  tap.event = [&](uint32_t, uint32_t subject, const shoal::gossip::MemberEvent& ev, Time now) {
    if (subject == 5 && ev.member.state == State::dead && !first_dead) first_dead = now;
  };
  c.add_observer(&tap);
  const Time at = c.now();
  c.crash(5);
  c.hint(4, 5);
  c.hint(6, 5);
  const bool seen = c.run_until(at + sec(5), ms(1), [&] { return everyone_shows(c, 5, State::dead); });
  INFO(c.violation().value_or("no violation"));
  REQUIRE(c.ok());
  REQUIRE(seen);
  REQUIRE(first_dead);
  MESSAGE("first dead after " << (*first_dead - at).count() / 1000 << " ms, everywhere after "
                              << (c.now() - at).count() / 1000 << " ms");
  CHECK(*first_dead - at < ms(30));  // the normal floor alone is 181 ms at 16 members (150 ms x log10 16)
  CHECK(refusal_deaths(c) > 0);
}

TEST_CASE(
    "10% loss with kills and restarts at the same address for 180 virtual s: no live member removed, no "
    "death on refusal of a live generation (seed 73, 32 members, a kill every 3 s)") {
  Cluster c(small_cluster(32, 73));
  REQUIRE(start_and_converge(c, sec(30)));
  LiveRemovals live(c);
  c.network().defaults().loss = 0.10;
  SimRng rng(derive_seed(73, 0x6b696c6c));
  uint64_t refusals_before_end = 0;
  kill_and_restart(c, rng, sec(3), c.now() + sec(180));
  refusals_before_end = refusal_deaths(c);
  INFO(c.violation().value_or("no violation"));
  REQUIRE(c.ok());
  INFO(live.first);
  CHECK(live.removals == 0);
  CHECK(live.by_refusal == 0);
  CHECK(refusals_before_end > 0);  // the rule did its work on the killed ones
}

TEST_CASE(
    "stalled members (10% paused 1.5 s every 10 s) beside kills and same-address restarts: the rule never "
    "removes a paused or live member (seed 74, 32 members, 120 virtual s)") {
  Cluster c(small_cluster(32, 74, Revival::by_refutation));
  REQUIRE(start_and_converge(c, sec(30)));
  LiveRemovals live(c);
  SimRng rng(derive_seed(74, 0x7374616c6c));
  const Time end = c.now() + sec(120);
  std::function<void(uint32_t)> stall_once = [&](uint32_t m) {
    if (c.status(m) == MemberStatus::running) c.pause(m, ms(1500));
    if (c.now() + sec(10) < end) c.at(c.now() + sec(10), [&stall_once, m] { stall_once(m); });
  };
  for (uint32_t m = 0; m < 3; ++m) {
    live.spared[m] = 1;  // a paused member may die on the normal timers; never on a refusal
    c.at(c.now() + ms(static_cast<int64_t>(rng.below(10000))), [&stall_once, m] { stall_once(m); });
  }
  kill_and_restart(c, rng, sec(4), end);
  INFO(c.violation().value_or("no violation"));
  REQUIRE(c.ok());
  INFO(live.first);
  CHECK(live.by_refusal == 0);
  CHECK(live.removals == 0);
}

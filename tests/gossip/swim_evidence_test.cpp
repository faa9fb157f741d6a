// Evidence from the data plane, on small clusters wired by TestNet: hints probe at once, a refusal
// from a member's own port (confirmed by others) kills below the normal suspicion floor, and nothing
// else does: a live member, a silent host and a paused process keep the normal path. And the evidence
// of a committed view: a joiner it holds is alive where its news had not arrived yet (vouch).
#include <doctest/doctest.h>

#include "gossip/swim.hpp"
#include "test_net.hpp"

using namespace shoal;
using namespace shoal::gossip;
using namespace shoal::gossip::testing;

namespace {

const std::vector<std::string> kSix = {"a", "b", "c", "d", "e", "f"};

void start_all(TestNet& net, const std::vector<std::string>& names) {
  net.start(names[0]);
  for (size_t i = 1; i < names.size(); ++i) net.start(names[i], {names[0]});
  net.run_for(ms_(2000));
}

bool all_see(TestNet& net, const std::vector<std::string>& observers, const std::string& subject, State s) {
  for (const auto& o : observers) {
    if (o != subject && net.view(o, subject) != s) return false;
  }
  return true;
}

std::vector<std::string> except(const std::vector<std::string>& names, const std::string& out) {
  std::vector<std::string> v;
  for (const auto& n : names) {
    if (n != out) v.push_back(n);
  }
  return v;
}

uint64_t total(TestNet& net, const std::vector<std::string>& names, uint64_t Stats::*field) {
  uint64_t sum = 0;
  for (const auto& n : names) sum += net.node(n).stats().*field;
  return sum;
}

// The earliest time any of `observers` announced `subject` in `state`, or nullopt.
std::optional<Time> first_event(TestNet& net, const std::vector<std::string>& observers, const std::string& subject,
                                State state, bool* refused = nullptr) {
  std::optional<Time> first;
  for (const auto& o : observers) {
    for (const auto& e : net.state(o).events) {
      if (e.member.id.name != subject || e.member.state != state) continue;
      if (!first || e.member.state_since < *first) first = e.member.state_since;
      if (refused != nullptr && e.member.refused) *refused = true;
    }
  }
  return first;
}

// The normal floor at 6 members: suspicion_min_ms (log10 6 < 1).
const Time kNormalFloor = ms_(150);

}  // namespace

TEST_CASE("a hinted member whose own port refuses is dead everywhere below the normal suspicion floor") {
  TestNet net(11);
  start_all(net, kSix);
  net.crash("f");
  const Time killed = net.now;
  const auto others = except(kSix, "f");
  for (const auto& o : {"a", "b"}) net.hint(o, "f");  // the trainers beside a and b saw their connection break
  net.run_for(ms_(3000), [&] { return all_see(net, others, "f", State::dead); });
  REQUIRE(all_see(net, others, "f", State::dead));
  bool refused = false;
  const auto suspected = first_event(net, others, "f", State::suspect);
  const auto dead = first_event(net, others, "f", State::dead, &refused);
  REQUIRE(suspected);
  REQUIRE(dead);
  CHECK(*suspected - killed < ms_(5));  // the hint's probe went out at once: no waiting for the round-robin
  CHECK(*dead - *suspected < kNormalFloor);
  CHECK(net.now - killed < ms_(100));
  CHECK(refused);
  CHECK(total(net, others, &Stats::hints) == 2);
  CHECK(total(net, others, &Stats::deaths_on_refusal) >= 1);
  for (const auto& o : others) {
    for (const auto& s : others) CHECK(net.view(o, s) == State::alive);
  }
}

TEST_CASE("a hint about a member that answers suspects nobody") {
  TestNet net(12);
  start_all(net, kSix);
  net.hint("a", "b");
  net.hint("a", "b");  // a repeat within hint_interval_ms is dropped
  net.run_for(ms_(1000));
  CHECK(net.node("a").stats().hints == 1);
  CHECK(net.node("a").stats().hints_ignored == 1);
  CHECK(total(net, kSix, &Stats::suspicions_raised) == 0);
  CHECK(all_see(net, kSix, "b", State::alive));
}

TEST_CASE("a hint about an unknown, dead or self member is counted and dropped") {
  TestNet net(13);
  start_all(net, kSix);
  Effects out;
  net.node("a").hint_failed("nobody", 1, net.now, out);
  net.node("a").hint_failed("a", 1, net.now, out);
  net.node("a").hint_failed("b", 99, net.now, out);  // another generation
  CHECK(net.node("a").stats().hints_ignored == 3);
  CHECK(net.node("a").stats().hints == 0);
}

TEST_CASE("a silent host refuses nothing: its death takes the normal suspicion floor at least") {
  TestNet net(14);
  start_all(net, kSix);
  net.power_off("f");
  const auto others = except(kSix, "f");
  for (const auto& o : {"a", "b"}) net.hint(o, "f");
  net.run_for(ms_(5000), [&] { return all_see(net, others, "f", State::dead); });
  REQUIRE(all_see(net, others, "f", State::dead));
  bool refused = false;
  const auto suspected = first_event(net, others, "f", State::suspect);
  const auto dead = first_event(net, others, "f", State::dead, &refused);
  REQUIRE(suspected);
  REQUIRE(dead);
  CHECK(*dead - *suspected >= kNormalFloor);
  CHECK_FALSE(refused);
  CHECK(total(net, others, &Stats::refusals_seen) == 0);
  CHECK(total(net, others, &Stats::deaths_on_refusal) == 0);
}

TEST_CASE("a paused process refuses nothing: hints about it never use the refusal rule") {
  TestNet net(15);
  start_all(net, kSix);
  net.pause("f", ms_(120));  // shorter than the normal floor: it must come back alive
  for (const auto& o : {"a", "b", "c"}) net.hint(o, "f");
  net.run_for(ms_(3000));
  CHECK(total(net, kSix, &Stats::refusals_seen) == 0);
  CHECK(total(net, kSix, &Stats::deaths_on_refusal) == 0);
  CHECK(all_see(net, kSix, "f", State::alive));
}

TEST_CASE("a member whose agent port refuses but that answers pings stays (an answer voids the refusals)") {
  TestNet net(16);
  start_all(net, kSix);
  net.refuse_streams_to("f");  // every TCP connection to f is refused, its UDP works
  const auto others = except(kSix, "f");
  for (const auto& o : others) net.hint(o, "f");
  net.run_for(ms_(3000));
  CHECK(total(net, others, &Stats::refusals_seen) >= 1);
  CHECK(total(net, others, &Stats::deaths_on_refusal) == 0);
  CHECK(total(net, others, &Stats::deaths_declared) == 0);
  CHECK(all_see(net, kSix, "f", State::alive));
}

TEST_CASE("with the rule off (no confirmations wanted) a refused member dies on the normal timers") {
  Config cfg;
  cfg.refusal_confirmations = 0;
  TestNet net(17, cfg);
  start_all(net, kSix);
  net.crash("f");
  const auto others = except(kSix, "f");
  for (const auto& o : {"a", "b"}) net.hint(o, "f");
  net.run_for(ms_(5000), [&] { return all_see(net, others, "f", State::dead); });
  REQUIRE(all_see(net, others, "f", State::dead));
  const auto suspected = first_event(net, others, "f", State::suspect);
  const auto dead = first_event(net, others, "f", State::dead);
  REQUIRE(suspected);
  REQUIRE(dead);
  CHECK(*dead - *suspected >= kNormalFloor);
  CHECK(total(net, others, &Stats::deaths_on_refusal) == 0);
}

TEST_CASE("a restart with the same address is admitted; its predecessor's refusals never touch it") {
  TestNet net(18);
  start_all(net, kSix);
  net.crash("f");
  for (const auto& o : {"a", "b"}) net.hint(o, "f");
  net.run_for(ms_(200));
  net.start("f", {"a"}, 2);  // the same name and address, a new generation
  net.run_for(ms_(3000));
  for (const auto& o : kSix) {
    const auto m = net.node(o).find("f");
    REQUIRE(m);
    CHECK(m->id.generation == 2);
    CHECK(m->state == State::alive);
  }
}

namespace {

// What a committed view says of one member (membership::vouched_by's record).
Member vouched(const std::string& name, uint64_t generation = 1) {
  Member m;
  m.id = Identity{name, generation, TestNet::addr_of(name)};
  m.meta = MemberMeta{name, 8, {}};
  return m;
}

}  // namespace

TEST_CASE("a member a committed view vouches for is alive at once where its news had not arrived, then probed") {
  TestNet net(17);
  start_all(net, {"a", "b", "c"});
  REQUIRE_FALSE(net.view("b", "d").has_value());
  const size_t events_before = net.state("b").events.size();
  const size_t queued_before = net.node("b").queued_updates();
  net.vouch("b", {vouched("d")});
  CHECK(net.view("b", "d") == State::alive);
  REQUIRE(net.state("b").events.size() == events_before + 1);
  CHECK_FALSE(net.state("b").events.back().previous.has_value());  // announced as newly seen
  CHECK(net.node("b").queued_updates() == queued_before);  // and not gossiped on: the view's members know it
  // d never started: b's probes find nothing there, and the normal path declares it dead.
  net.run_for(ms_(5000), [&] { return net.view("b", "d") == State::dead; });
  CHECK(net.view("b", "d") == State::dead);
  // A vouched member that does answer stays alive.
  net.start("e", {"a"});
  net.vouch("c", {vouched("e")});
  net.run_for(ms_(3000));
  CHECK(all_see(net, {"a", "b", "c"}, "e", State::alive));
}

TEST_CASE("a view's vouching leaves a record of the same or a newer generation alone; a restart replaces one") {
  TestNet net(19);
  start_all(net, {"a", "b", "c", "d"});
  const size_t events_before = net.state("a").events.size();
  net.vouch("a", {vouched("a"), vouched("b")});  // itself, and a member it knows at that generation
  CHECK(net.state("a").events.size() == events_before);
  net.crash("d");
  net.run_for(ms_(5000), [&] { return net.view("a", "d") == State::dead; });
  REQUIRE(net.view("a", "d") == State::dead);
  net.vouch("a", {vouched("d", 1)});  // an old view's word does not raise the dead
  CHECK(net.view("a", "d") == State::dead);
  net.vouch("a", {vouched("d", 2)});  // d restarted (a new generation) and joined a view
  const auto d = net.node("a").find("d");
  REQUIRE(d);
  CHECK(d->id.generation == 2);
  CHECK(d->state == State::alive);
}

// Member records: SWIM precedence within a generation, newer generations, stored incarnations,
// digests and tombstones.
#include "gossip/member_table.hpp"

#include <doctest/doctest.h>

using namespace shoal::gossip;

namespace {

Member record(State s, uint64_t gen, uint64_t inc) { return Member{Identity{"b", gen, "b:1"}, s, inc, {}, Time{0}}; }

Claim claim(State s, uint64_t gen, uint64_t inc) {
  return Claim{Identity{"b", gen, "b:1"}, s, inc, MemberMeta{"host-b", 4, {}}, "c"};
}

MemberTable table() { return MemberTable(Identity{"a", 1, "a:1"}, MemberMeta{}, Time{0}); }

}  // namespace

TEST_CASE("alive beats suspect only with a higher incarnation") {
  CHECK(judge(record(State::suspect, 1, 3), State::alive, 1, 4) == Verdict::replace);
  CHECK(judge(record(State::suspect, 1, 3), State::alive, 1, 3) == Verdict::stale);
  CHECK(judge(record(State::suspect, 1, 3), State::alive, 1, 2) == Verdict::stale);
}

TEST_CASE("suspect beats alive at an equal or higher incarnation") {
  CHECK(judge(record(State::alive, 1, 3), State::suspect, 1, 3) == Verdict::replace);
  CHECK(judge(record(State::alive, 1, 3), State::suspect, 1, 5) == Verdict::replace);
  CHECK(judge(record(State::alive, 1, 3), State::suspect, 1, 2) == Verdict::stale);
}

TEST_CASE("a repeated suspicion at the same incarnation is the same claim (a confirmation)") {
  CHECK(judge(record(State::suspect, 1, 3), State::suspect, 1, 3) == Verdict::same);
  CHECK(judge(record(State::suspect, 1, 3), State::suspect, 1, 4) == Verdict::replace);
}

TEST_CASE("dead beats alive and suspect at an equal incarnation, not at a lower one") {
  CHECK(judge(record(State::alive, 1, 3), State::dead, 1, 3) == Verdict::replace);
  CHECK(judge(record(State::suspect, 1, 3), State::dead, 1, 3) == Verdict::replace);
  CHECK(judge(record(State::alive, 1, 3), State::dead, 1, 2) == Verdict::stale);
}

TEST_CASE("a dead member is revived only by an alive with a higher incarnation") {
  CHECK(judge(record(State::dead, 1, 3), State::alive, 1, 3) == Verdict::stale);
  CHECK(judge(record(State::dead, 1, 3), State::alive, 1, 4) == Verdict::replace);
  CHECK(judge(record(State::dead, 1, 3), State::suspect, 1, 9) == Verdict::stale);
}

TEST_CASE("left ends a generation: no alive of that generation comes back") {
  CHECK(judge(record(State::left, 1, 3), State::alive, 1, 9) == Verdict::stale);
  CHECK(judge(record(State::dead, 1, 5), State::left, 1, 3) == Verdict::replace);
  CHECK(judge(record(State::alive, 1, 3), State::left, 1, 3) == Verdict::replace);
}

TEST_CASE("a newer generation beats every state of an older one; an older generation never wins") {
  for (State s : {State::alive, State::suspect, State::dead, State::left}) {
    CHECK(judge(record(s, 1, 50), State::alive, 2, 0) == Verdict::replace);
    CHECK(judge(record(s, 2, 0), State::alive, 1, 99) == Verdict::stale);
    CHECK(judge(record(s, 2, 0), State::dead, 1, 99) == Verdict::stale);
  }
  // Nobody announced generation 2 yet: a suspicion of it has no address to probe.
  CHECK(judge(record(State::alive, 1, 0), State::suspect, 2, 0) == Verdict::stale);
}

TEST_CASE("a higher dead incarnation is stored, so a later stale alive cannot resurrect the member") {
  auto t = table();
  REQUIRE(t.apply(claim(State::alive, 1, 2), Time{0}).inserted);
  REQUIRE(t.apply(claim(State::dead, 1, 2), Time{0}).verdict == Verdict::replace);
  CHECK(t.apply(claim(State::dead, 1, 5), Time{0}).verdict == Verdict::raise_only);
  CHECK(t.find("b")->incarnation == 5);
  CHECK(t.apply(claim(State::alive, 1, 4), Time{0}).verdict == Verdict::stale);
  CHECK(t.find("b")->state == State::dead);
  CHECK(t.apply(claim(State::alive, 1, 6), Time{0}).verdict == Verdict::replace);
  CHECK(t.find("b")->state == State::alive);
}

TEST_CASE("a restarted member replaces its own death record at once") {
  auto t = table();
  REQUIRE(t.apply(claim(State::alive, 1, 7), Time{0}).inserted);
  REQUIRE(t.apply(claim(State::dead, 1, 7), Time{0}).verdict == Verdict::replace);
  auto out = t.apply(claim(State::alive, 2, 0), Time{5});
  CHECK(out.verdict == Verdict::replace);
  CHECK(out.previous == State::dead);
  CHECK(t.find("b")->id.generation == 2);
  CHECK(t.find("b")->incarnation == 0);
  CHECK(t.find("b")->state_since == Time{5});
}

TEST_CASE("an unknown member is recorded from alive and tombstones, not from a suspicion") {
  auto t = table();
  CHECK(t.apply(claim(State::suspect, 1, 0), Time{0}).member == nullptr);
  CHECK(t.find("b") == nullptr);
  CHECK(t.apply(claim(State::dead, 1, 0), Time{0}).inserted);
  CHECK(t.find("b")->state == State::dead);
  CHECK(t.live_count() == 1);
}

TEST_CASE("the digest follows the live records and not the order they arrived in") {
  auto t1 = table();
  auto t2 = table();
  Claim c = claim(State::alive, 1, 0);
  Claim d = c;
  d.id.name = "c";
  t1.apply(c, Time{0});
  t1.apply(d, Time{0});
  t2.apply(d, Time{0});
  CHECK(t1.digest() != t2.digest());
  t2.apply(c, Time{0});
  CHECK(t1.digest() == t2.digest());
  t1.apply(claim(State::suspect, 1, 0), Time{0});  // suspect counts like alive
  CHECK(t1.digest() == t2.digest());
  t1.apply(claim(State::alive, 1, 1), Time{0});
  CHECK(t1.digest() != t2.digest());
  CHECK(t1.live_count() == 3);
}

TEST_CASE("tombstones expire after their time to live, live records never") {
  auto t = table();
  t.apply(claim(State::alive, 1, 0), Time{0});
  Claim c = claim(State::alive, 1, 0);
  c.id.name = "c";
  t.apply(c, Time{0});
  c.state = State::dead;
  t.apply(c, Time{100});
  std::vector<std::string> removed;
  t.expire_tombstones(Time{150}, Time{100}, removed);
  CHECK(removed.empty());
  t.expire_tombstones(Time{200}, Time{100}, removed);
  REQUIRE(removed.size() == 1);
  CHECK(removed[0] == "c");
  CHECK(t.find("c") == nullptr);
  CHECK(t.find("b") != nullptr);
  CHECK(t.size() == 2);
}

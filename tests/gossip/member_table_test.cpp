// Member records: SWIM precedence within a generation, newer generations, stored incarnations,
// digests and tombstones.
#include "gossip/member_table.hpp"

#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "gossip/codec.hpp"

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
  CHECK(t.find("b").incarnation() == 5);
  CHECK(t.apply(claim(State::alive, 1, 4), Time{0}).verdict == Verdict::stale);
  CHECK(t.find("b").state() == State::dead);
  CHECK(t.apply(claim(State::alive, 1, 6), Time{0}).verdict == Verdict::replace);
  CHECK(t.find("b").state() == State::alive);
}

TEST_CASE("a restarted member replaces its own death record at once") {
  auto t = table();
  REQUIRE(t.apply(claim(State::alive, 1, 7), Time{0}).inserted);
  REQUIRE(t.apply(claim(State::dead, 1, 7), Time{0}).verdict == Verdict::replace);
  auto out = t.apply(claim(State::alive, 2, 0), Time{5});
  CHECK(out.verdict == Verdict::replace);
  CHECK(out.previous == State::dead);
  CHECK(t.find("b").generation() == 2);
  CHECK(t.find("b").incarnation() == 0);
  CHECK(t.find("b").state_since() == Time{5});
}

TEST_CASE("an unknown member is recorded from alive and tombstones, not from a suspicion") {
  auto t = table();
  CHECK(t.apply(claim(State::suspect, 1, 0), Time{0}).member == MemberRef());
  CHECK(!t.find("b"));
  CHECK(t.apply(claim(State::dead, 1, 0), Time{0}).inserted);
  CHECK(t.find("b").state() == State::dead);
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
  CHECK(!t.find("c"));
  CHECK(t.find("b").name() == "b");
  CHECK(t.size() == 2);
}

TEST_CASE("a record keeps its address and metadata until a claim changes them") {
  auto t = table();
  Claim c = claim(State::alive, 1, 0);
  c.meta.labels = {{"rack", "r7"}, {"zone", ""}};
  REQUIRE(t.apply(c, Time{0}).inserted);
  MemberRef b = t.find("b");
  CHECK(b.addr() == "b:1");
  CHECK(b.meta() == c.meta);
  // An accusation names no metadata and keeps the address and metadata of the record.
  REQUIRE(t.apply(claim(State::suspect, 1, 0), Time{1}).verdict == Verdict::replace);
  CHECK(b.state() == State::suspect);
  CHECK(b.addr() == "b:1");
  CHECK(b.meta() == c.meta);
  // The member refutes from a new address with new metadata.
  c.id.addr = "10.0.0.2:7946";
  c.incarnation = 1;
  c.meta = MemberMeta{"host-b2", 8, {}};
  REQUIRE(t.apply(c, Time{2}).verdict == Verdict::replace);
  CHECK(b.name() == "b");
  CHECK(b.addr() == "10.0.0.2:7946");
  CHECK(b.meta() == c.meta);
  CHECK(b.member().id == c.id);
  // A new generation that dies before announcing itself: the address stays, the metadata goes.
  REQUIRE(t.apply(claim(State::dead, 2, 0), Time{3}).verdict == Verdict::replace);
  CHECK(b.generation() == 2);
  CHECK(b.addr() == "b:1");
  CHECK(b.meta() == MemberMeta{});
}

TEST_CASE("metadata survives its compact encoding, empty or not") {
  for (const MemberMeta& m : {MemberMeta{}, MemberMeta{"", 3, {}}, MemberMeta{"h", 0, {{"", ""}}},
                              MemberMeta{std::string(300, 'x'), 4000000000u, {{"k", std::string(200, 'v')}, {"a", "b"}}}}) {
    CHECK(decode_meta(encode_meta(m)) == m);
  }
  CHECK(encode_meta(MemberMeta{}).empty());
}

TEST_CASE("records stay readable after many replacements and a compaction of the arena") {
  auto t = table();
  std::vector<std::string> removed;
  for (int round = 0; round < 40; ++round) {
    for (int i = 0; i < 200; ++i) {
      Claim c{Identity{"m" + std::to_string(i), 1, "10.1." + std::to_string(round) + "." + std::to_string(i) + ":1"},
              State::alive, static_cast<uint64_t>(round), MemberMeta{"host-" + std::to_string(i), 8, {}}, ""};
      t.apply(c, Time{round});
    }
  }
  // Half of them die and expire: their text and the text of every replaced address is garbage.
  for (int i = 0; i < 200; i += 2) {
    t.apply(Claim{Identity{"m" + std::to_string(i), 1, ""}, State::dead, 39, {}, "a"}, Time{100});
  }
  t.expire_tombstones(Time{1000}, Time{100}, removed);
  CHECK(removed.size() == 100);
  CHECK(t.size() == 101);
  for (int i = 1; i < 200; i += 2) {
    const MemberRef m = t.find("m" + std::to_string(i));
    REQUIRE(m);
    CHECK(m.addr() == "10.1.39." + std::to_string(i) + ":1");
    CHECK(m.meta().host == "host-" + std::to_string(i));
  }
  CHECK(t.find("a").addr() == "a:1");
}

TEST_CASE("names and addresses beyond the limit are refused, not truncated") {
  auto t = table();
  Claim c = claim(State::alive, 1, 0);
  c.id.name = std::string(MemberTable::kMaxNameBytes + 1, 'n');
  CHECK_FALSE(t.apply(c, Time{0}).inserted);
  CHECK(t.size() == 1);
  CHECK_THROWS_AS(MemberTable(Identity{std::string(MemberTable::kMaxNameBytes + 1, 'a'), 1, "a:1"}, MemberMeta{}, Time{0}),
                  std::invalid_argument);
}

TEST_CASE("a death on a confirmed refusal is recorded as such, and a new generation clears it") {
  MemberTable t = table();
  t.apply(claim(State::alive, 1, 0), Time{0});
  Claim dead = claim(State::dead, 1, 0);
  dead.refused = true;
  REQUIRE(t.apply(dead, Time{1}).verdict == Verdict::replace);
  CHECK(t.find("b").refused());
  CHECK(t.find("b").member().refused);
  REQUIRE(t.apply(claim(State::alive, 2, 0), Time{2}).verdict == Verdict::replace);
  CHECK_FALSE(t.find("b").refused());
  Claim suspect = claim(State::suspect, 2, 0);
  suspect.refused = true;  // a suspicion's evidence is the accuser's, never stored in the record
  t.apply(suspect, Time{3});
  CHECK_FALSE(t.find("b").refused());
}

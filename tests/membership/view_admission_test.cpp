// The admission of views offered by peers (admit) and the tally of confirmations (Vouches), as tables:
// which offers are installed at once, which wait for members of the view to confirm them, and which are
// refused and why; which reports count, and how many a view needs.
#include <doctest/doctest.h>

#include <limits>
#include <string>
#include <vector>

#include "membership/view_admission.hpp"

using namespace shoal::membership;

namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

ViewMember member(const std::string& name, uint64_t join_epoch = 1, uint64_t generation = 1) {
  return ViewMember{name, "host-" + name, "10.0.0." + std::to_string(name.back() - 'a' + 1) + ":7946", 8, join_epoch,
                    generation};
}

View view(uint64_t epoch, std::vector<ViewMember> members) {
  auto v = View::make(epoch, std::move(members), 0x5eed);
  REQUIRE(v.ok());
  return *v;
}

// Members a, b, c (generation 1) in every view below unless a row says otherwise.
View abc(uint64_t epoch) { return view(epoch, {member("a"), member("b"), member("c")}); }

struct Row {
  const char* what;
  uint64_t current_epoch;
  View candidate;
  ViewSource source;
  std::string sender;
  uint64_t sender_generation;
  bool accepted_here;
  bool orphaned;
  AdmissionVerdict expected;
};

AdmissionVerdict install() { return {Admission::install, std::nullopt}; }
AdmissionVerdict confirm() { return {Admission::confirm, std::nullopt}; }
AdmissionVerdict ignore() { return {Admission::ignore, std::nullopt}; }
AdmissionVerdict refuse(ViewRefusal why) { return {Admission::refuse, why}; }

}  // namespace

TEST_CASE("offered views: installed, confirmed first or refused, by the rule in view_keeper.hpp") {
  const View forged = view(6, {member("x", 6), member("y", 6), member("z", 6)});  // none of the real hosts
  const View joined = view(6, {member("a"), member("b"), member("c"), member("d", 6)});
  const std::vector<Row> rows = {
      {"not newer", 5, abc(5), ViewSource::commit, "a", 1, false, false, ignore()},
      {"older", 5, abc(4), ViewSource::answer, "a", 1, false, false, ignore()},
      {"epoch 2^64-1 from a member", 5, abc(kMax), ViewSource::commit, "a", 1, false, false,
       refuse(ViewRefusal::epoch_overflow)},
      {"epoch 2^64-1, even accepted and orphaned", 5, abc(kMax), ViewSource::commit, "a", 1, true, true,
       refuse(ViewRefusal::epoch_overflow)},
      {"epoch 2^64-1 to a joiner", 0, abc(kMax), ViewSource::answer, "a", 1, false, false,
       refuse(ViewRefusal::epoch_overflow)},
      {"2^32 + 1 ahead", 5, abc(5 + kMaxEpochJump + 1), ViewSource::commit, "a", 1, false, false,
       refuse(ViewRefusal::epoch_jump)},
      {"2^32 ahead: asked", 5, abc(5 + kMaxEpochJump), ViewSource::commit, "a", 1, false, false, confirm()},
      {"a joiner offered 2^40", 0, abc(uint64_t{1} << 40), ViewSource::commit, "a", 1, false, false,
       refuse(ViewRefusal::epoch_jump)},
      {"COMMIT from outside both views", 5, forged, ViewSource::commit, "intruder", 1, false, false,
       refuse(ViewRefusal::outsider)},
      {"COMMIT from a member's old generation", 5, abc(6), ViewSource::commit, "a", 2, false, false,
       refuse(ViewRefusal::outsider)},
      {"COMMIT from a member of the current view only", 5, forged, ViewSource::commit, "a", 1, false, false,
       confirm()},
      {"COMMIT from a member of the committed view only", 5, forged, ViewSource::commit, "x", 1, false, false,
       confirm()},
      {"the value accepted here, next epoch", 5, joined, ViewSource::commit, "a", 1, true, false, install()},
      {"the value accepted here by a joiner (epoch 1)", 0, abc(1), ViewSource::commit, "a", 1, true, false, install()},
      {"accepted while behind, two epochs on", 5, abc(7), ViewSource::commit, "a", 1, true, false, install()},
      {"a full COMMIT of a value not accepted here", 5, joined, ViewSource::commit, "a", 1, false, false, confirm()},
      {"a view in an answer", 5, abc(9), ViewSource::answer, "nobody", 0, false, false, confirm()},
      {"a joiner's first view", 0, joined, ViewSource::commit, "b", 1, false, false, confirm()},
      {"a joiner's first view, from an outsider", 0, joined, ViewSource::commit, "q", 1, false, false,
       refuse(ViewRefusal::outsider)},
      {"an orphan takes what it is offered", 5, abc(9), ViewSource::answer, "b", 1, false, true, install()},
      {"an orphan still refuses outsiders", 5, forged, ViewSource::commit, "intruder", 1, false, true,
       refuse(ViewRefusal::outsider)},
  };
  for (const Row& r : rows) {
    CAPTURE(r.what);
    const View current = r.current_epoch == 0 ? View() : abc(r.current_epoch);
    const AdmissionVerdict got = admit(OfferedView{current, r.candidate, r.source, r.sender, r.sender_generation,
                                                   r.accepted_here, r.orphaned});
    CHECK(got.action == r.expected.action);
    CHECK(got.why == r.expected.why);
  }
}

TEST_CASE("a confirmation needs, with this member itself, a majority of its view") {
  // size of the view -> reports needed, for a member of it and for a member that is not in it
  const std::vector<std::pair<size_t, std::pair<size_t, size_t>>> table = {
      {1, {1, 1}}, {2, {1, 2}}, {3, {1, 2}}, {4, {2, 3}}, {5, {2, 3}}, {6, {3, 4}}, {7, {3, 4}}, {9, {4, 5}}};
  for (const auto& [size, needed] : table) {
    CAPTURE(size);
    std::vector<ViewMember> ms;
    for (size_t i = 0; i < size; ++i) ms.push_back(member(std::string(1, static_cast<char>('a' + i))));
    const View base = view(3, ms);
    CHECK(confirmations_needed(base, "a", 1) == needed.first);
    CHECK(confirmations_needed(base, "a", 2) == needed.second);  // another generation of "a" is not a member
    CHECK(confirmations_needed(base, "q", 1) == needed.second);
  }
}

TEST_CASE("only the members of the view, at the address and generation it records, vouch; self never") {
  const View base = view(5, {member("a"), member("b"), member("c"), member("d"), member("e")});
  const View next = view(6, {member("a"), member("b"), member("c"), member("d")});
  Vouches v(base, "a", 1);
  CHECK_FALSE(v.record("a", member("a").addr, 1, next));                 // itself
  CHECK_FALSE(v.record("q", "10.0.0.9:7946", 1, next));                  // not a member
  CHECK_FALSE(v.record("b", "10.6.6.6:7946", 1, next));                  // a member's name at another address
  CHECK_FALSE(v.record("b", member("b").addr, 2, next));                 // another generation
  CHECK_FALSE(v.record("b", member("b").addr, 1, base));                 // not newer than the base
  CHECK(v.reporters() == 0);
  CHECK(v.record("b", member("b").addr, 1, next));
  CHECK_FALSE(v.confirmed());  // 1 of the 2 needed (with "a" itself: 2 of 5)
  CHECK(v.record("b", member("b").addr, 1, next));  // the same member again counts once
  CHECK_FALSE(v.confirmed());
  CHECK(v.record("c", member("c").addr, 1, next));
  REQUIRE(v.confirmed());
  CHECK(*v.confirmed() == next);
  CHECK(v.reporters() == 2);
  CHECK(v.newest_reported() == 6);
}

TEST_CASE("the newest view enough members hold wins; a newer view too few hold does not") {
  const View base = view(5, {member("a"), member("b"), member("c"), member("d"), member("e")});
  const View six = view(6, {member("a"), member("b"), member("c"), member("d")});
  const View seven = view(7, {member("a"), member("b"), member("c")});
  const View forged = view(9, {member("x", 9), member("y", 9)});
  Vouches v(base, "a", 1);
  v.record("b", member("b").addr, 1, six);
  v.record("c", member("c").addr, 1, seven);
  v.record("d", member("d").addr, 1, forged);
  CHECK_FALSE(v.confirmed());  // three different views, one report each
  v.record("e", member("e").addr, 1, six);
  REQUIRE(v.confirmed());
  CHECK(v.confirmed()->epoch() == 6);
  v.record("b", member("b").addr, 1, seven);  // b moved on: six has one report left, seven two
  REQUIRE(v.confirmed());
  CHECK(v.confirmed()->epoch() == 7);
  CHECK(v.newest_reported() == 9);
}

TEST_CASE("a joiner's view is confirmed by its own members holding exactly it, never by others") {
  const View real = view(8, {member("a"), member("b"), member("c")});
  const View forged = view(8, {member("a"), member("x", 8), member("y", 8)});
  Vouches v(View(), "d", 1);  // a joiner: no view yet
  // A member of neither view, and a member of the forged one that does not hold it, confirm nothing.
  CHECK(v.record("q", "10.0.0.17:7946", 1, forged));
  CHECK(v.record("a", member("a").addr, 1, real));
  CHECK_FALSE(v.confirmed());  // "a" holds the real view: 1 of its 2 needed; the forged view has none of its own
  CHECK(v.record("x", "10.6.6.6:7946", 1, forged));  // "x" at another address than the forged view records
  CHECK_FALSE(v.confirmed());
  CHECK(v.record("b", member("b").addr, 1, real));
  REQUIRE(v.confirmed());
  CHECK(*v.confirmed() == real);
}

TEST_CASE("a joiner takes no credit for itself: a view of one other member and the joiner confirms nothing") {
  const View pair = view(8, {member("a"), ViewMember{"d", "host-d", "10.0.0.4:7946", 8, 8, 1}});
  Vouches v(View(), "d", 1);
  CHECK(v.record("a", member("a").addr, 1, pair));
  CHECK_FALSE(v.confirmed());  // "a" alone: 1 of the 2 members, and "d" is the joiner
}

TEST_CASE("a member reporting a new invented view every time holds one view in the tally, not thousands") {
  const View base = view(5, {member("a"), member("b"), member("c"), member("d"), member("e")});
  const View six = view(6, {member("a"), member("b"), member("c"), member("d")});
  Vouches v(base, "a", 1);
  v.record("c", member("c").addr, 1, six);
  for (uint64_t i = 0; i < 5000; ++i) {
    REQUIRE(v.record("b", member("b").addr, 1, view(7 + i, {member("b"), member("x", 7 + i)})));
  }
  CHECK(v.reporters() == 2);
  CHECK(v.newest_reported() == 7 + 4999);
  CHECK_FALSE(v.confirmed());
  v.record("d", member("d").addr, 1, six);
  REQUIRE(v.confirmed());  // the honest reports survived the churn of lies
  CHECK(*v.confirmed() == six);
}

// Delta proposals (membership/view_delta.hpp) and vote bitmaps (membership/vote_bitmap.hpp): the pure parts
// of the agreement that docs/agreement.md designs, as tables.
#include "membership/view_delta.hpp"

#include <doctest/doctest.h>

#include <cstddef>
#include <string>
#include <vector>

#include "membership/vote_bitmap.hpp"

using namespace shoal::membership;

namespace {

ViewMember vm(size_t i, uint64_t join_epoch = 1, uint64_t generation = 1) {
  return ViewMember{"h" + std::to_string(i),
                    "host" + std::to_string(i),
                    "10.0.0." + std::to_string(i + 1) + ":7946",
                    2,
                    join_epoch,
                    generation};
}

View view_of(uint64_t epoch, std::vector<ViewMember> members) {
  auto v = View::make(epoch, std::move(members), 77);
  REQUIRE(v.ok());
  return *v;
}

}  // namespace

TEST_CASE("delta_between and apply_delta: base + delta is the wanted view, for every kind of change") {
  const View base = view_of(3, {vm(0), vm(1), vm(2), vm(3)});
  struct Row {
    const char* what;
    std::vector<ViewMember> wanted;
    std::vector<std::string> removed;
    std::vector<std::string> added;
  };
  const Row rows[] = {
      {"no change", {vm(0), vm(1), vm(2), vm(3)}, {}, {}},
      {"one removed", {vm(0), vm(2), vm(3)}, {"h1"}, {}},
      {"a rack removed", {vm(0)}, {"h1", "h2", "h3"}, {}},
      {"one joined", {vm(0), vm(1), vm(2), vm(3), vm(4, 4)}, {}, {"h4"}},
      {"a restart replaces its old self", {vm(0), vm(1), vm(2), vm(3, 4, 2)}, {"h3"}, {"h3"}},
      {"removed and joined at once", {vm(4, 4), vm(1), vm(2), vm(0)}, {"h3"}, {"h4"}},
  };
  for (const Row& r : rows) {
    CAPTURE(r.what);
    const auto d = delta_between(base, r.wanted);
    REQUIRE(d.ok());
    CHECK(d->base_epoch == 3);
    CHECK(d->base_hash == base.hash());
    CHECK(d->removed == r.removed);
    std::vector<std::string> added;
    for (const auto& m : d->added) added.push_back(m.name);
    CHECK(added == r.added);
    const auto next = apply_delta(base, *d);
    REQUIRE(next.ok());
    const auto want = View::make(4, r.wanted, base.lineage());
    REQUIRE(want.ok());
    CHECK(*next == *want);
    CHECK(next->hash() == want->hash());
  }
}

TEST_CASE("every member that wants the same list derives the same delta id; any difference changes it") {
  const View base = view_of(3, {vm(0), vm(1), vm(2)});
  const auto a = delta_between(base, {vm(0), vm(2), vm(5, 4)});
  const auto b = delta_between(base, {vm(5, 4), vm(2), vm(0)});  // another order
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(*a == *b);
  CHECK(delta_id(*a) == delta_id(*b));
  ViewDelta other = *a;
  other.added[0].slots = 3;
  CHECK(delta_id(other) != delta_id(*a));
  other = *a;
  other.base_hash ^= 1;
  CHECK(delta_id(other) != delta_id(*a));
  other = *a;
  other.removed.clear();
  CHECK(delta_id(other) != delta_id(*a));
  const auto evicting = delta_between(base, {vm(0), vm(2), vm(5, 4)}, {"h1"});
  REQUIRE(evicting.ok());
  CHECK(delta_id(*evicting) != delta_id(*a));
  const auto next = apply_delta(base, *evicting);
  REQUIRE(next.ok());
  CHECK(next->evicts("h1"));
}

TEST_CASE("bad deltas are refused with a reason, before a view is built") {
  const View base = view_of(3, {vm(0), vm(1), vm(2)});
  const auto good = delta_between(base, {vm(0), vm(1)});
  REQUIRE(good.ok());
  struct Row {
    const char* what;
    ViewDelta delta;
    const char* says;
  };
  ViewDelta other_base = *good;
  other_base.base_hash ^= 1;
  ViewDelta other_epoch = *good;
  other_epoch.base_epoch = 2;
  ViewDelta not_member = *good;
  not_member.removed = {"h9"};
  ViewDelta unsorted = *good;
  unsorted.removed = {"h2", "h1"};
  ViewDelta twice = *good;
  twice.removed = {"h1", "h1"};
  ViewDelta kept_added = *good;
  kept_added.added = {vm(0)};
  ViewDelta evicts_kept = *good;
  evicts_kept.evicted = {"h0"};
  ViewDelta long_name = *good;
  long_name.added = {vm(7, 4)};
  long_name.added[0].name = std::string(kMaxViewTextBytes + 1, 'x');
  ViewDelta too_many = *good;
  too_many.removed.assign(kMaxViewMembers + 1, "h");
  const Row rows[] = {
      {"another view of the epoch", other_base, "not for epoch"},
      {"another epoch", other_epoch, "not for epoch"},
      {"a removal of a non-member", not_member, "not a member"},
      {"unsorted removals", unsorted, "sorted and unique"},
      {"a name removed twice", twice, "sorted and unique"},
      {"an addition of a kept member", kept_added, "which the view keeps"},
      {"an eviction of a kept member", evicts_kept, "evicts"},
      {"a name past the bound", long_name, "longer than"},
      {"more removals than any view", too_many, "larger than any view"},
  };
  for (const Row& r : rows) {
    CAPTURE(r.what);
    const auto v = apply_delta(base, r.delta);
    REQUIRE_FALSE(v.ok());
    CHECK(v.error().message.find(r.says) != std::string::npos);
  }
  CHECK_FALSE(delta_between(base, {vm(0), vm(0)}).ok());                 // a name twice in the wanted list
  CHECK_FALSE(delta_between(base, {vm(0), vm(1), vm(2)}, {"h1"}).ok());  // evicts a member it keeps
}

TEST_CASE("quorums: fast is ceil(3n/4), classic a majority, and any classic quorum holds most fast voters") {
  struct Row {
    size_t n, fast, classic;
  };
  const Row rows[] = {{1, 1, 1},  {2, 2, 2},           {3, 3, 2},
                      {4, 3, 3},  {5, 4, 3},           {8, 6, 5},
                      {10, 8, 6}, {10000, 7500, 5001}, {25000, 18750, 12501}};
  for (const Row& r : rows) {
    CAPTURE(r.n);
    CHECK(fast_quorum(r.n) == r.fast);
    CHECK(classic_quorum(r.n) == r.classic);
    // Fast Paxos' condition: a classic quorum meets a fast quorum in more than half of the classic quorum's
    // size, i.e. |F| + |C| - n > |C| / 2.
    CHECK(2 * (r.fast + r.classic - r.n) > r.classic);
  }
}

TEST_CASE("vote bitmaps: set, merge by segment, count as bits arrive") {
  VoteBitmap a(2500), b(2500);
  CHECK(a.segments() == 3);
  CHECK(a.segment_size(0) == kVoteSegmentBytes);
  CHECK(a.segment_size(2) == (2500 - 2048 + 7) / 8);
  CHECK(a.segment_size(3) == 0);
  CHECK(a.set(0));
  CHECK_FALSE(a.set(0));
  CHECK(a.set(1500));
  CHECK(a.set(2499));
  CHECK_FALSE(a.set(2500));
  CHECK(b.set(1500));
  CHECK(b.set(7));
  for (size_t s = 0; s < a.segments(); ++s) {
    const auto merged = b.merge_segment(s, a.segment_bytes(s));
    REQUIRE(merged.ok());
  }
  CHECK(b.count() == 4);  // 0, 7, 1500, 2499: 1500 was not counted twice
  for (size_t i : {size_t{0}, size_t{7}, size_t{1500}, size_t{2499}}) CHECK(b.has(i));
  CHECK_FALSE(b.has(1));
  const auto again = b.merge_segment(1, a.segment_bytes(1));
  REQUIRE(again.ok());
  CHECK(*again == 0);
}

TEST_CASE("vote bitmaps refuse a segment of the wrong place or length, or with bits past the view, changing nothing") {
  VoteBitmap v(1030);  // two segments, the second of 6 members in one byte
  std::vector<std::byte> full(kVoteSegmentBytes, std::byte{0xff});
  struct Row {
    const char* what;
    size_t segment;
    std::vector<std::byte> bytes;
    const char* says;
  };
  const Row rows[] = {
      {"past the view", 2, {std::byte{1}}, "past a view"},
      {"too short", 0, std::vector<std::byte>(kVoteSegmentBytes - 1), "bytes, not"},
      {"too long", 1, std::vector<std::byte>(2), "bytes, not"},
      {"a bit past the last member", 1, {std::byte{0x40}}, "past the view's last member"},
  };
  for (const Row& r : rows) {
    CAPTURE(r.what);
    const auto m = v.merge_segment(r.segment, r.bytes);
    REQUIRE_FALSE(m.ok());
    CHECK(m.error().message.find(r.says) != std::string::npos);
    CHECK(v.count() == 0);
  }
  const auto ok = v.merge_segment(1, std::vector<std::byte>{std::byte{0x3f}});
  REQUIRE(ok.ok());
  CHECK(*ok == 6);
  const auto first = v.merge_segment(0, full);
  REQUIRE(first.ok());
  CHECK(v.count() == 1030);
  CHECK(v.count() >= fast_quorum(1030));
}

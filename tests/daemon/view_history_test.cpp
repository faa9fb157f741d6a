// ViewHistory: status shows the last 8 committed views, view-history keeps the last 256; a change past the
// screen keeps only the first names of a long joined or left list (with the full counts), and the count of views
// recorded goes on past what is kept.
#include "daemon/view_history.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using shoal::daemon::ViewHistory;

namespace {

// A view of `epoch` whose members are m0 .. m{n-1}.
shoal::membership::View view_of(uint64_t epoch, size_t n) {
  std::vector<shoal::membership::ViewMember> members;
  for (size_t i = 0; i < n; ++i) {
    shoal::membership::ViewMember m;
    m.name = "m" + std::to_string(i);
    m.host = m.name;
    m.addr = "127.0.0.1:" + std::to_string(1000 + i);
    m.slots = 1;
    m.join_epoch = 1;
    m.generation = 1;
    members.push_back(m);
  }
  auto v = shoal::membership::View::make(epoch, std::move(members));
  REQUIRE(v.ok());
  return *v;
}

}  // namespace

TEST_CASE("status shows the last 8 views; the history keeps the last 256 and counts every one") {
  ViewHistory h;
  h.on_view(view_of(1, 200));  // a first view that joins 200 members
  for (uint64_t e = 2; e <= 300; ++e) h.on_view(view_of(e, 200 + (e % 2)));
  CHECK(h.recorded() == 300);
  const auto shown = h.changes();
  REQUIRE(shown.size() == ViewHistory::kShown);
  CHECK(shown.front().epoch == 293);
  CHECK(shown.back().epoch == 300);
  const auto all = h.all_changes();
  REQUIRE(all.size() == ViewHistory::kKept);
  CHECK(all.front().epoch == 300 - ViewHistory::kKept + 1);
  CHECK(all.back().epoch == 300);
  CHECK(all.back().left == std::vector<std::string>{"m200"});  // even epochs have 200 members, odd ones 201
  CHECK(all[all.size() - 2].joined == std::vector<std::string>{"m200"});
}

TEST_CASE("a change past the screen keeps the first names of a long list, with the full count") {
  ViewHistory h;
  h.on_view(view_of(1, 200));
  for (uint64_t e = 2; e <= ViewHistory::kShown; ++e) h.on_view(view_of(e, 200));
  REQUIRE(h.changes().front().epoch == 1);
  CHECK(h.changes().front().joined.size() == 200);  // still on the screen: every name
  h.on_view(view_of(ViewHistory::kShown + 1, 200));
  const auto first = h.all_changes().front();
  CHECK(first.epoch == 1);
  CHECK(first.joined.size() == ViewHistory::kNamesKept);
  CHECK(first.joined_count == 200);
  CHECK(first.joined.front() == "m0");
}

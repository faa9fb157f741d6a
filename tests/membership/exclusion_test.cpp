// The operator's exclusions (membership/exclusion.hpp): the excluded list in the view and its hash, the rules
// as tables (names, the majority, --min-hosts, readmits, --precheck-exclude's choice), desired_view with a
// list, and keepers committing exclusions and readmissions asked of any member, two operators at once included.
#include "membership/exclusion.hpp"

#include <doctest/doctest.h>

#include <algorithm>

#include "keeper_cluster.hpp"
#include "membership/desired_view.hpp"
#include "membership/view_codec.hpp"

using namespace shoal::membership;
using namespace shoal::membership::testing;
using shoal::gossip::State;

namespace {

constexpr Time kSecond{1'000'000};

std::vector<ViewMember> members_of(std::vector<size_t> idx) {
  std::vector<ViewMember> ms;
  for (size_t i : idx) ms.push_back(ViewMember{name_of(i), "host" + std::to_string(i), addr_of(i), 2, 1, 1});
  return ms;
}

View view_of(uint64_t epoch, std::vector<size_t> idx, std::vector<std::string> excluded = {}) {
  return View::make(epoch, members_of(std::move(idx)), 7, {}, std::move(excluded)).value();
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("the excluded list is part of the view: validated, sorted, hashed only when present, carried by the codec") {
  const View plain = view_of(3, {0, 1, 2});
  CHECK(plain.excluded().empty());
  CHECK(View::make(3, members_of({0, 1, 2}), 7).value().hash() == plain.hash());  // no list: the hash of before
  const View with = view_of(3, {0, 1, 2}, {"h9", "h4"});
  CHECK(with.excluded() == std::vector<std::string>{"h4", "h9"});
  CHECK(with.excludes("h9"));
  CHECK_FALSE(with.excludes("h0"));
  CHECK(with.hash() != plain.hash());
  CHECK(contains(with.to_string(), "excluded [h4, h9]"));
  CHECK(contains(View::make(3, members_of({0, 1}), 7, {}, {"h1"}).error().message, "is excluded and a member"));
  CHECK(contains(View::make(3, members_of({0, 1}), 7, {}, {"h5", "h5"}).error().message, "excluded twice"));
  CHECK(contains(View::make(3, members_of({0, 1}), 7, {}, {""}).error().message, "empty name"));

  shoal::wire::ViewMsg msg;
  to_msg(with, &msg);
  const auto back = from_msg(msg);
  REQUIRE(back.ok());
  CHECK(*back == with);
  for (size_t i = 0; i <= kMaxViewExcluded; ++i) msg.add_excluded("x" + std::to_string(i));
  const auto refused = from_msg(msg);
  REQUIRE_FALSE(refused.ok());
  CHECK(contains(refused.error().message, "excludes"));
}

TEST_CASE("names resolve to members of the view or of gossip, a host's name to every member on it") {
  const View v = view_of(2, {0, 1, 2}, {"h7"});
  std::vector<shoal::gossip::Member> g = {member(0), member(1), member(2), member(5)};
  auto twin = member(6);
  twin.meta.host = "host1";  // a second member on host1, known to gossip only
  g.push_back(twin);
  struct Row {
    std::vector<std::string> words;
    std::vector<std::string> names;  // empty: refused
    const char* error;
  };
  const Row rows[] = {
      {{"h1"}, {"h1"}, ""},
      {{"h2", "h0"}, {"h0", "h2"}, ""},
      {{"h5"}, {"h5"}, ""},           // alive, not in the view: kept out before it joins
      {{"h7"}, {"h7"}, ""},           // excluded already (a readmit names it)
      {{"host1"}, {"h1", "h6"}, ""},  // a host: every member on it
      {{"h1", "host1"}, {"h1", "h6"}, ""},
      {{"nobody"}, {}, "'nobody' is neither a member nor a host"},
      {{}, {}, "name at least one"},
  };
  for (const Row& r : rows) {
    const std::string first = r.words.empty() ? std::string("(none)") : r.words.front();
    INFO(first);
    const auto got = resolve_members(v, g, r.words);
    if (r.names.empty()) {
      REQUIRE_FALSE(got.ok());
      CHECK(contains(got.error().message, r.error));
    } else {
      REQUIRE(got.ok());
      CHECK(*got == r.names);
    }
  }
}

TEST_CASE("an exclusion keeps a majority of the view and --min-hosts; a readmit names excluded members") {
  const View v = view_of(4, {0, 1, 2, 3, 4});
  struct Row {
    std::vector<std::string> excluded;
    uint32_t min_hosts;
    const char* error;  // "": allowed
  };
  const Row rows[] = {
      {{"h4"}, 1, ""},
      {{"h3", "h4"}, 1, ""},
      {{"h3", "h4", "h9"}, 1, ""},  // a name out of the view does not count against the majority
      {{"h2", "h3", "h4"}, 1, "would leave 2, not a majority (at least 3 must stay)"},
      {{"h0", "h1", "h2", "h3", "h4"}, 1, "not a majority"},
      {{"h3", "h4"}, 4, "fewer than --min-hosts 4"},
      {{"h4"}, 4, ""},
  };
  for (const Row& r : rows) {
    INFO(r.excluded.size() << " excluded, min-hosts " << r.min_hosts);
    const shoal::Status st = check_exclusion(v, r.excluded, r.min_hosts);
    if (std::string(r.error).empty()) {
      CHECK(st.ok());
    } else {
      REQUIRE_FALSE(st.ok());
      CHECK(contains(st.error().message, r.error));
    }
  }
  const View two = view_of(4, {0, 1});
  CHECK(contains(check_exclusion(two, {"h1"}, 1).error().message, "not a majority"));  // 1 of 2 is no majority

  CHECK(check_readmit({"h3", "h4"}, {"h4"}).ok());
  const shoal::Status not_there = check_readmit({"h3"}, {"h4"});
  REQUIRE_FALSE(not_there.ok());
  CHECK(contains(not_there.error().message, "'h4' is not excluded (excluded: h3)"));
  CHECK(contains(check_readmit({}, {"h4"}).error().message, "(excluded: none)"));
  CHECK(next_excluded({"h1", "h3"}, {"h2", "h3"}, {"h1"}) == std::vector<std::string>{"h2", "h3"});
}

TEST_CASE("--precheck-exclude excludes the flagged members, or none when they would take the majority") {
  const View v = view_of(1, {0, 1, 2, 3, 4});
  CHECK(precheck_exclusion(v, {}, 1).names.empty());
  CHECK(precheck_exclusion(v, {"h2"}, 1).names == std::vector<std::string>{"h2"});
  CHECK(precheck_exclusion(v, {"h9", "h4", "h2"}, 1).names == std::vector<std::string>{"h2", "h4"});  // h9: no member
  const auto too_many = precheck_exclusion(v, {"h1", "h2", "h3"}, 1);
  CHECK(too_many.names.empty());
  CHECK(contains(too_many.refused, "not a majority"));
  const auto min = precheck_exclusion(v, {"h4"}, 5);
  CHECK(min.names.empty());
  CHECK(contains(min.refused, "--min-hosts 5"));
}

TEST_CASE(
    "desired_view leaves excluded members out while alive, keeps excluded joiners out, and a new list is a change") {
  const View v = view_of(3, {0, 1, 2, 3});
  FlapDamper damper;
  const std::vector<shoal::gossip::Member> g = {member(0), member(1), member(2), member(3), member(4)};
  damper.observe(g, Time(0));
  Config cfg;
  cfg.hold_down = Time(0);
  const Time now = 10 * kSecond;
  const std::vector<std::string> list = {"h3", "h4"};
  const Desired d = desired_view(v, g, damper, cfg, now, std::nullopt, std::nullopt, nullptr, &list);
  CHECK(d.differs);
  CHECK(d.excluding == 1);      // h3 leaves the view
  CHECK(d.excluded_held == 1);  // h4 does not join
  CHECK(d.live_of_view == 4);   // h3 is alive: it still counts for the majority
  CHECK(d.majority_live);
  CHECK(d.excluded == list);
  std::vector<std::string> names;
  for (const auto& m : d.members) names.push_back(m.name);
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"h0", "h1", "h2"});

  // Once a view carries the list, no member wants to change anything.
  const View carried = View::make(4, members_of({0, 1, 2}), 7, {}, list).value();
  const Desired same = desired_view(carried, g, damper, cfg, now);
  CHECK_FALSE(same.differs);
  CHECK(same.excluded_held == 2);
  // A list change alone (a readmit of a host that is down) is a change too.
  const std::vector<std::string> shorter = {"h3"};
  const std::vector<shoal::gossip::Member> without_h4 = {member(0), member(1), member(2), member(3)};
  const Desired readmit =
      desired_view(carried, without_h4, damper, cfg, now, std::nullopt, std::nullopt, nullptr, &shorter);
  CHECK(readmit.differs);
  CHECK(readmit.members.size() == 3);
  CHECK(readmit.excluded == shorter);
}

TEST_CASE("any member excludes a host by a committed view; it stays out alive; a readmit lets it back at once") {
  Config cfg;
  cfg.hold_down = 30 * kSecond;  // a readmit must not wait for it
  KeeperCluster c(5, cfg);
  c.everyone_sees(range(5));
  c.run_for(3 * kSecond);
  REQUIRE(c.node(0).view().size() == 5);

  // Asked of h3, not the designated proposer: it proposes at once.
  auto named = c.exclude(3, {"host4"}, {});
  REQUIRE(named.ok());
  CHECK(*named == std::vector<std::string>{"h4"});
  CHECK(c.node(3).exclusion_pending());
  c.run_for(kSecond / 2);
  c.run_for(Time(0));
  for (size_t i = 0; i < 5; ++i) {
    INFO("node " << i);
    CHECK(c.node(i).view().size() == 4);
    CHECK(c.node(i).view().excludes("h4"));
  }
  CHECK_FALSE(c.node(3).exclusion_pending());
  c.run_for(60 * kSecond);  // h4 alive all along, past every hold-down: still out
  CHECK(c.node(0).view().find("h4") == nullptr);
  CHECK(contains(c.node(4).status().reason, "excluded by the operator"));

  // Refusals: a majority, an unknown name, a readmit of a member not excluded, a member out of the view.
  CHECK(contains(c.exclude(1, {"h1", "h2"}, {}).error().message, "not a majority"));
  CHECK(contains(c.exclude(1, {"ghost"}, {}).error().message, "'ghost' is neither"));
  CHECK(contains(c.exclude(1, {}, {"h2"}).error().message, "'h2' is not excluded"));
  CHECK(contains(c.exclude(4, {"h0"}, {}).error().message, "not in the committed view"));
  CHECK_FALSE(c.node(1).exclusion_pending());

  const uint64_t before = c.node(0).view().epoch();
  REQUIRE(c.exclude(2, {}, {"h4"}).ok());
  c.run_for(kSecond);
  for (size_t i = 0; i < 5; ++i) {
    INFO("node " << i);
    CHECK(c.node(i).view().size() == 5);
    CHECK(c.node(i).view().excluded().empty());
  }
  CHECK(c.node(0).view().epoch() == before + 1);  // one view: the readmit and the join together
  check_one_view_per_epoch(c);
}

TEST_CASE("two operators at once on two members: both exclusions are committed, one view each") {
  KeeperCluster c(7);
  c.everyone_sees(range(7));
  c.run_for(3 * kSecond);
  REQUIRE(c.node(0).view().size() == 7);
  REQUIRE(c.exclude(1, {"h5"}, {}).ok());
  REQUIRE(c.exclude(2, {"h6"}, {}).ok());
  c.run_for(20 * kSecond);
  for (size_t i = 0; i < 5; ++i) {
    INFO("node " << i);
    CHECK(c.node(i).view().size() == 5);
    CHECK(c.node(i).view().excluded() == std::vector<std::string>{"h5", "h6"});
  }
  CHECK_FALSE(c.node(1).exclusion_pending());
  CHECK_FALSE(c.node(2).exclusion_pending());
  check_one_view_per_epoch(c);
}

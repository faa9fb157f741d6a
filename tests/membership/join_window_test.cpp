// The join window: in a large view, joiners alone wait until the window after the last view change has
// passed; with any other change they go at once (join_window.hpp, desired_view.hpp).
#include "membership/join_window.hpp"

#include <doctest/doctest.h>

#include "keeper_cluster.hpp"
#include "membership/desired_view.hpp"

using namespace shoal::membership;
using namespace shoal::membership::testing;
using shoal::gossip::State;
using std::chrono::seconds;

namespace {

constexpr Time kWindow = seconds(10);

View view_of(size_t n) {
  std::vector<ViewMember> ms;
  for (size_t i = 0; i < n; ++i)
    ms.push_back(ViewMember{name_of(i), "host" + std::to_string(i), addr_of(i), 2, 1, 1});  // as member(i)
  return View::make(3, ms).value();
}

}  // namespace

TEST_CASE(
    "join_gate holds joiners only in a large view of epoch 1 or later, with nothing else changing, inside the window") {
  struct Row {
    const char* what;
    size_t size;
    uint64_t epoch;
    bool other_change;
    std::optional<Time> installed_at;
    Time now;
    Time window;
    bool admit;
  };
  const Time t0 = seconds(100);
  const Row rows[] = {
      {"inside the window", 32, 5, false, t0, t0 + seconds(3), kWindow, false},
      {"just before it opens", 32, 5, false, t0, t0 + kWindow - Time(1), kWindow, false},
      {"as it opens", 32, 5, false, t0, t0 + kWindow, kWindow, true},
      {"long after", 32, 5, false, t0, t0 + seconds(3600), kWindow, true},
      {"another change rides along", 32, 5, true, t0, t0 + seconds(3), kWindow, true},
      {"a small view", 31, 5, false, t0, t0 + seconds(3), kWindow, true},
      {"the bootstrap", 32, 0, false, t0, t0 + seconds(3), kWindow, true},
      {"the window off", 32, 5, false, t0, t0 + seconds(3), Time(0), true},
      {"no install time known", 32, 5, false, std::nullopt, t0 + seconds(3), kWindow, true},
  };
  for (const Row& r : rows) {
    CAPTURE(r.what);
    const JoinGate g = join_gate(r.size, r.epoch, r.other_change, r.installed_at, r.now, r.window, 32);
    CHECK(g.admit == r.admit);
    CHECK(g.opens_at.has_value() == !r.admit);
    if (!r.admit) CHECK(*g.opens_at == *r.installed_at + r.window);
  }
}

TEST_CASE("desired_view holds a joiner of a 32-member view for the window, and lets it ride along with a removal") {
  Config cfg;
  cfg.join_window = kWindow;
  cfg.join_window_from = 32;
  const View v = view_of(32);
  std::vector<shoal::gossip::Member> gossip;
  for (size_t i = 0; i < 33; ++i) gossip.push_back(member(i));  // h32 is new
  FlapDamper damper;
  damper.observe(gossip, Time(0));
  const Time installed = seconds(50);

  SUBCASE("held inside the window, with the instant it opens") {
    const Desired d = desired_view(v, gossip, damper, cfg, installed + seconds(2), std::nullopt, installed);
    CHECK_FALSE(d.differs);
    CHECK(d.joins_held == 1);
    REQUIRE(d.joins_open_at.has_value());
    CHECK(*d.joins_open_at == installed + kWindow);
    CHECK(d.next_eligible == d.joins_open_at);
  }
  SUBCASE("admitted once the window has passed") {
    const Desired d = desired_view(v, gossip, damper, cfg, installed + kWindow, std::nullopt, installed);
    CHECK(d.differs);
    CHECK(d.joins_held == 0);
    CHECK(d.members.size() == 33);
  }
  SUBCASE("admitted at once with a removal: one view for both") {
    gossip[5].state = State::dead;
    const Desired d = desired_view(v, gossip, damper, cfg, installed + seconds(2), std::nullopt, installed);
    CHECK(d.differs);
    CHECK(d.joins_held == 0);
    CHECK(d.members.size() == 32);  // h5 out, h32 in
    CHECK(std::any_of(d.members.begin(), d.members.end(), [](const ViewMember& m) { return m.name == "h32"; }));
  }
  SUBCASE("a view below --join-window-from admits at once") {
    cfg.join_window_from = 33;
    const Desired d = desired_view(v, gossip, damper, cfg, installed + seconds(2), std::nullopt, installed);
    CHECK(d.differs);
    CHECK(d.members.size() == 33);
  }
}

TEST_CASE("keepers of a 32-member view admit two joiners together once the window opens, not one view each") {
  Config cfg;
  cfg.join_window = kWindow;
  cfg.join_window_from = 32;
  KeeperCluster c(34, cfg);
  c.crash(32);  // not started yet
  c.crash(33);
  std::vector<size_t> live(32);
  for (size_t i = 0; i < 32; ++i) live[i] = i;
  c.everyone_sees(live);
  c.run_for(seconds(3));
  REQUIRE(c.node(0).view().size() == 32);
  const uint64_t epoch = c.node(0).view().epoch();
  // h32 starts 1 s later and h33 4 s later: both wait, then join in one view.
  c.start(32);
  live.push_back(32);
  c.everyone_sees(live);
  c.run_for(seconds(3));
  CHECK(c.node(0).view().epoch() == epoch);
  CHECK(c.node(0).status().reason.find("join window") != std::string::npos);
  c.start(33);
  live.push_back(33);
  c.everyone_sees(live);
  c.run_for(seconds(2));
  CHECK(c.node(0).view().epoch() == epoch);
  c.run_for(seconds(6));  // past the window (10 s from a commit within the first 3 s)
  CHECK(c.node(0).view().size() == 34);
  CHECK(c.node(0).view().epoch() == epoch + 1);
  CHECK(c.node(33).view().epoch() == epoch + 1);
}

// Committed views with real `shoal agent` processes on loopback: one view forms, and a kill -9 (of
// any member, the designated proposer and rank 0 included), a graceful leave and a join each yield
// exactly one new view with the same hash at every member.
#include <doctest/doctest.h>
#include <signal.h>

#include "../support/agent_fixture.hpp"

using shoal::test::AgentCluster;
using namespace std::chrono_literals;

namespace {

struct ViewSeen {
  uint64_t epoch = 0;
  std::string hash;
  uint64_t world = 0;
  std::string status;
};

ViewSeen view_seen(const AgentCluster& c, const std::string& name) {
  ViewSeen v;
  const auto doc = c.request<shoal::control::ViewReply>(name, "view");
  if (!doc) return v;
  v.epoch = doc->epoch;
  v.hash = doc->hash;
  v.world = doc->world_size;
  v.status = doc->status;
  return v;
}

// True when every agent in `names` has committed `epoch` with `world` ranks and the same hash.
bool agree(const AgentCluster& c, const std::vector<std::string>& names, uint64_t epoch, uint64_t world) {
  std::string hash;
  for (const auto& n : names) {
    const ViewSeen v = view_seen(c, n);
    if (v.epoch != epoch || v.world != world || v.status != "stable") return false;
    if (hash.empty()) hash = v.hash;
    if (v.hash != hash) return false;
  }
  return true;
}

// Starts n agents with the given --min-hosts and waits until all agree on a view holding all n;
// returns its epoch through `epoch`.
std::vector<std::string> start_job(AgentCluster& c, int n, int min_hosts, uint64_t& epoch) {
  std::vector<std::string> all;
  for (int i = 0; i < n; ++i) all.push_back("host" + std::to_string(i));
  const std::vector<std::string> args = {"--min-hosts", std::to_string(min_hosts), "--hold-down", "1"};
  c.start(all[0], {}, args);
  for (int i = 1; i < n; ++i) c.start(all[i], {c[all[0]].addr}, args);
  const bool formed = AgentCluster::eventually(
      [&] {
        epoch = view_seen(c, all[0]).epoch;
        return epoch > 0 && agree(c, all, epoch, uint64_t(n));
      },
      30s);
  INFO("host1 log:\n" << c.log_tail(all[1]));
  REQUIRE(formed);
  return all;
}

std::vector<std::string> without(std::vector<std::string> v, const std::string& gone) {
  std::erase(v, gone);
  return v;
}

}  // namespace

TEST_CASE("eight agents with --min-hosts 8 form exactly one first view, the same everywhere") {
  AgentCluster c;
  uint64_t epoch = 0;
  const auto all = start_job(c, 8, 8, epoch);
  CHECK(epoch == 1);
  CHECK(view_seen(c, all[3]).world == 8);
}

TEST_CASE("a job at --min-hosts stalls on a loss and says so, instead of shrinking below it") {
  AgentCluster c;
  uint64_t epoch = 0;
  const auto all = start_job(c, 3, 3, epoch);
  c[all[2]].process->send_signal(SIGKILL);
  const bool stalled = AgentCluster::eventually(
      [&] {
        const auto doc = c.request<shoal::control::ViewReply>(all[0], "view");
        return doc && doc->status == "stalled" && doc->reason.find("--min-hosts") != std::string::npos;
      },
      20s);
  CHECK(stalled);
  CHECK(view_seen(c, all[1]).epoch == epoch);
}

TEST_CASE("kill -9 of the designated proposer, which also holds rank 0, yields one new view at every survivor") {
  AgentCluster c;
  uint64_t e = 0;
  const auto all = start_job(c, 5, 2, e);
  c[all[0]].process->send_signal(SIGKILL);
  const auto survivors = without(all, all[0]);
  const bool moved = AgentCluster::eventually([&] { return agree(c, survivors, e + 1, 4); }, 20s);
  INFO("host1 log:\n" << c.log_tail(all[1]));
  CHECK(moved);
}

TEST_CASE("kill -9 of another member, then a graceful leave, then a join: one view change each") {
  AgentCluster c;
  uint64_t e = 0;
  const auto all = start_job(c, 5, 2, e);
  c[all[3]].process->send_signal(SIGKILL);
  auto live = without(all, all[3]);
  REQUIRE(AgentCluster::eventually([&] { return agree(c, live, e + 1, 4); }, 20s));

  c[all[4]].process->send_signal(SIGTERM);
  live = without(live, all[4]);
  const bool left = AgentCluster::eventually([&] { return agree(c, live, e + 2, 3); }, 20s);
  INFO("host0 log:\n" << c.log_tail(all[0]));
  REQUIRE(left);

  c.start("host9", {c[all[0]].addr}, {"--min-hosts", "3"});
  live.push_back("host9");
  const bool joined = AgentCluster::eventually([&] { return agree(c, live, e + 3, 4); }, 20s);
  INFO("host9 log:\n" << c.log_tail("host9"));
  CHECK(joined);
}

TEST_CASE("most of a view leaving gracefully at once never strands the rest in a stall") {
  // Leavers linger as acceptors until a view without them is committed, so the survivor still reaches
  // a majority of each view on the way down (the end of a job, or scancel of part of it).
  AgentCluster c;
  uint64_t e = 0;
  const auto all = start_job(c, 3, 1, e);
  c[all[0]].process->send_signal(SIGTERM);
  c[all[1]].process->send_signal(SIGTERM);
  const bool alone = AgentCluster::eventually(
      [&] {
        const ViewSeen v = view_seen(c, all[2]);
        return v.epoch > e && v.world == 1 && v.status == "stable";
      },
      10s);
  INFO("host2 log:\n" << c.log_tail(all[2]));
  CHECK(alone);
  CHECK(c[all[0]].process->wait_exit(5s) == std::optional<int>(0));
  CHECK(c[all[1]].process->wait_exit(5s) == std::optional<int>(0));
}

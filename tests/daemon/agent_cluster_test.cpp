// Real `shoal agent` processes on loopback: joining, crash detection, graceful leave, restart.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>

#include <thread>

#include "../support/agent_fixture.hpp"
#include "control/replies/errors_and_acks.hpp"
#include "control/replies/stats.hpp"

using shoal::test::AgentCluster;
using namespace std::chrono_literals;

namespace {

std::vector<std::string> names(int n, const std::string& prefix = "node") {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

// Starts n agents, all joining through the first, and waits until each sees n alive members.
std::vector<std::string> start_cluster(AgentCluster& c, int n) {
  const auto all = names(n);
  c.start(all[0]);
  for (int i = 1; i < n; ++i) c.start(all[i], {c[all[0]].addr});
  const bool converged = AgentCluster::eventually(
      [&] {
        for (const auto& o : all) {
          const auto view = c.view_of(o);
          if (view.size() != all.size()) return false;
          for (const auto& [name, m] : view) {
            if (m.state != "alive") return false;
          }
        }
        return true;
      },
      20s);
  INFO("node1 log:\n" << c.log_tail(all[1]));
  REQUIRE(converged);
  return all;
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

TEST_CASE("eight agents that join through one seed all see eight alive members") {
  AgentCluster c;
  const auto all = start_cluster(c, 8);
  for (const auto& o : all) {
    const auto view = c.view_of(o);
    CHECK(view.size() == 8);
    for (const auto& n : all) {
      REQUIRE(view.count(n) == 1);
      CHECK(view.at(n).state == "alive");
      CHECK(view.at(n).addr == c[n].addr);
    }
  }
}

TEST_CASE("an agent killed with SIGKILL is seen as dead by every other member within 10 s") {
  AgentCluster c;
  const auto all = start_cluster(c, 8);
  const std::string victim = all[5];
  c[victim].process->send_signal(SIGKILL);
  CHECK(c[victim].process->wait_exit(5s) == 128 + SIGKILL);
  std::vector<std::string> survivors;
  for (const auto& n : all) {
    if (n != victim) survivors.push_back(n);
  }
  const bool detected = AgentCluster::eventually([&] { return c.all_see(survivors, victim, "dead"); }, 10s);
  INFO("node0 log:\n" << c.log_tail(all[0]));
  CHECK(detected);
  // Nobody else was taken down with it (a loaded machine may cause a brief, refuted suspicion).
  const bool survivors_alive = AgentCluster::eventually(
      [&] {
        for (const auto& n : survivors) {
          if (!c.all_see(survivors, n, "alive")) return false;
        }
        return true;
      },
      10s);
  CHECK(survivors_alive);
}

TEST_CASE("peer-lost about a killed agent: it is declared dead on its refused port, confirmed by others") {
  AgentCluster c;
  const auto all = start_cluster(c, 5);
  const std::string victim = all[4];
  const uint64_t generation = c.view_of(all[0]).at(victim).generation;
  c[victim].process->send_signal(SIGKILL);
  CHECK(c[victim].process->wait_exit(5s) == 128 + SIGKILL);
  // What the trainers beside node0 and node1 would say: their connections to the victim broke.
  for (const auto& o : {all[0], all[1]}) {
    const auto told = c.request<shoal::control::CommittedReply>(o, "peer-lost " + victim + " " + std::to_string(generation));
    REQUIRE(told.has_value());
  }
  const std::vector<std::string> survivors(all.begin(), all.end() - 1);
  const bool detected = AgentCluster::eventually([&] { return c.all_see(survivors, victim, "dead"); }, 5s);
  INFO("node0 log:\n" << c.log_tail(all[0]));
  CHECK(detected);
  uint64_t hints = 0, ignored = 0, refusals = 0, deaths_on_refusal = 0;
  for (const auto& o : survivors) {
    const auto stats = c.request<shoal::control::StatsReply>(o, "stats");
    REQUIRE(stats.has_value());
    hints += stats->gossip.hints;
    ignored += stats->gossip.hints_ignored;
    refusals += stats->gossip.refusals_seen;
    deaths_on_refusal += stats->gossip.deaths_on_refusal;
  }
  // The second hint may find the victim already dead (the first one's news got there first): dropped then.
  CHECK(hints >= 1);
  CHECK(hints + ignored == 2);
  CHECK(refusals >= 2);  // the hinted agent and at least one that checked for itself saw its port refuse
  CHECK(deaths_on_refusal >= 1);
  // A hint about a live member suspects nobody; a malformed one is refused with its usage.
  const uint64_t alive_generation = c.view_of(all[0]).at(all[2]).generation;
  REQUIRE(c.request<shoal::control::CommittedReply>(all[0], "peer-lost " + all[2] + " " + std::to_string(alive_generation)));
  CHECK(c.request_error(all[0], "peer-lost " + all[2]).value_or("").find("usage: peer-lost") != std::string::npos);
  std::this_thread::sleep_for(1s);
  for (const auto& n : survivors) CHECK(c.all_see(survivors, n, "alive"));
}

TEST_CASE("an agent stopped with SIGTERM leaves: the others see it as left, it exits 0 and removes its socket") {
  AgentCluster c;
  const auto all = start_cluster(c, 4);
  const std::string leaver = all[2];
  c[leaver].process->send_signal(SIGTERM);
  CHECK(c[leaver].process->wait_exit(5s) == 0);
  CHECK_FALSE(file_exists(c[leaver].control));
  const std::vector<std::string> others = {all[0], all[1], all[3]};
  // "Quickly": the leave is broadcast before the process exits, so no suspicion timeout is involved.
  const bool seen = AgentCluster::eventually([&] { return c.all_see(others, leaver, "left"); }, 3s);
  INFO("node0 log:\n" << c.log_tail(all[0]));
  CHECK(seen);
}

TEST_CASE("an agent restarted under the same name rejoins as alive with a new generation") {
  AgentCluster c;
  const auto all = start_cluster(c, 3);
  const std::string name = all[1];
  const uint64_t old_generation = c.view_of(all[0]).at(name).generation;
  const std::string old_addr = c[name].addr;
  c[name].process->send_signal(SIGKILL);
  REQUIRE(c[name].process->wait_exit(5s).has_value());

  // Same name, same port (the stale control socket is removed on the way).
  c.start(name, {c[all[0]].addr}, {}, old_addr);
  CHECK(c[name].addr == old_addr);
  const bool rejoined = AgentCluster::eventually(
      [&] {
        for (const auto& o : all) {
          const auto view = c.view_of(o);
          const auto it = view.find(name);
          if (it == view.end() || it->second.state != "alive" || it->second.generation <= old_generation) return false;
        }
        return true;
      },
      15s);
  INFO("node0 log:\n" << c.log_tail(all[0]));
  CHECK(rejoined);
}

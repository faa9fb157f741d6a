// --precheck-exclude against four real agents on loopback, one of them held to a twentieth of a CPU by a cgroup
// quota (a slow host): the first view's check flags it, the coordinator excludes it by a view change before the
// view is handed on, every agent commits that view, and the others hand it on only then. Needs a cgroup cpu
// controller to write (root); where there is none it says so, and fails under CI.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>

#include "../support/agent_fixture.hpp"
#include "../support/cpu_quota.hpp"
#include "control/replies.hpp"

using shoal::test::AgentCluster;
using namespace std::chrono_literals;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("--precheck-exclude: the host the first view's check flags is excluded before the view is handed on") {
  shoal::test::CpuQuota slow("shoal-precheck-exclude", 5);  // destroyed after the cluster: the agents are gone
  if (!slow.supported()) {
    const char* ci = std::getenv("CI");
    if (ci != nullptr && std::string(ci) == "true") FAIL("no cgroup cpu controller to write: this test needs one");
    MESSAGE("skipped: no cgroup cpu controller to write (run as root on a machine with one)");
    return;
  }
  AgentCluster c;
  std::vector<std::string> names;
  for (int i = 0; i < 4; ++i) names.push_back("host" + std::to_string(i));
  // A generous factor: only a host several times slower than the median is flagged, not the noise of four
  // agents sharing two cores.
  // --want-hosts: the check runs on the first view of all four (one may commit with three first); --min-hosts 3
  // lets the exclusion leave three.
  const std::vector<std::string> args = {
      "--min-hosts",       "3", "--want-hosts",    "4", "--wait-hosts", "60", "--precheck-exclude",
      "--precheck-factor", "3", "--precheck-wait", "40"};
  c.start(names[0], {}, args);
  c.start(names[1], {c[names[0]].addr}, args);
  c.start(names[2], {c[names[0]].addr}, args);
  auto& slow_agent = c.start(names[3], {c[names[0]].addr}, args);
  REQUIRE(slow.add(slow_agent.process->pid()));

  const auto excluded_everywhere = [&] {
    for (const auto& n : names) {
      const auto v = c.request<shoal::control::ViewReply>(n, "view");
      if (!v || v->members.size() != 3 || v->excluded != std::vector<std::string>{"host3"}) return false;
    }
    return true;
  };
  const bool excluded = AgentCluster::eventually(excluded_everywhere, 45s);
  INFO(c.log_tail(names[0], 60) << "\n---\n" << c.log_tail(names[1], 40));
  REQUIRE(excluded);
  CHECK(contains(c.log_tail(names[0], 200),
                 "precheck: excluding the flagged host(s) host3 before the view is handed on"));
  // The others held the first view until the one without host3 came, then handed that on.
  const bool handed_on = AgentCluster::eventually(
      [&] {
        for (int i = 0; i < 3; ++i) {
          if (!contains(c.log_tail(names[i], 200),
                        "precheck: the hosts the precheck flagged are excluded from epoch")) {
            return false;
          }
        }
        return true;
      },
      10s);
  CHECK(handed_on);
  const auto v = c.request<shoal::control::ViewReply>(names[3], "view");
  REQUIRE(v.has_value());
  CHECK_FALSE(v->in_view);
  CHECK(contains(v->reason, "excluded by the operator"));
}

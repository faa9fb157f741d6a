// `shoal status` against real agents: after a member is killed, the screen shows the view that
// removed it, the gossip event that started the change and how long it took, and members by state;
// --json carries the same; a request with arguments and an agent that is not there are clear errors.
#include <doctest/doctest.h>
#include <signal.h>

#include "../support/agent_fixture.hpp"
#include "control/json_reader.hpp"

using shoal::test::AgentCluster;
using shoal::test::run_command;
using namespace std::chrono_literals;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

uint64_t epoch_members(const AgentCluster& c, const std::string& name) {
  auto doc = c.request(name, "status");
  if (!doc || !doc->find("view")) return 0;
  return doc->find("view")->find("members")->as_uint64().value_or(0);
}

}  // namespace

TEST_CASE("shoal status shows the view change a kill caused, its trigger and its duration") {
  AgentCluster c;
  const std::string seed = c.start("s1").addr;
  c.start("s2", {seed});
  c.start("s3", {seed});
  REQUIRE(AgentCluster::eventually([&] { return epoch_members(c, "s1") == 3; }, 20s));
  c["s3"].process->send_signal(SIGKILL);
  INFO(c.log_tail("s1"));
  REQUIRE(AgentCluster::eventually([&] { return epoch_members(c, "s1") == 2; }, 30s));

  const auto screen = run_command({SHOAL_BINARY, "status", "--control", c["s1"].control});
  INFO(screen.out << screen.err);
  CHECK(screen.exit_code == 0);
  CHECK(contains(screen.out, "host     s1 ("));
  CHECK(contains(screen.out, "2 member(s), 2 of them live, stable; this host included"));
  CHECK(contains(screen.out, "alive 2, suspect 0, dead 1, left 0"));
  CHECK(contains(screen.out, "-s3  (s3 dead: "));
  CHECK(contains(screen.out, " s to commit)"));

  auto doc = c.request("s1", "status");
  REQUIRE(doc.has_value());
  const auto& changes = doc->find("view_changes")->items();
  REQUIRE(!changes.empty());
  const auto& last = changes.back();
  CHECK(last.find("left")->items().size() == 1);
  CHECK(last.find("trigger")->as_string() == std::string("s3 dead"));
  const double seconds = last.find("seconds")->as_double().value_or(-1);
  CHECK(seconds >= 0);
  CHECK(seconds < 30);

  auto bad = c.request("s1", "status now");
  REQUIRE(bad.has_value());
  CHECK(bad->find("error") != nullptr);
  const auto absent = run_command({SHOAL_BINARY, "status", "--control", c.dir() + "/nobody.sock"});
  CHECK(absent.exit_code == 1);
  CHECK(contains(absent.err, "shoal status:"));
}

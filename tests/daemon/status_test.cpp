// `shoal status` against real agents: after a member is killed, the screen shows the view that
// removed it, the gossip event that started the change and how long it took, and members by state;
// --json carries the same, and `--history` (view-history) the changes kept; a request with arguments and an
// agent that is not there are clear errors.
#include <doctest/doctest.h>
#include <signal.h>

#include "../support/agent_fixture.hpp"

using shoal::test::AgentCluster;
using shoal::test::run_command;
using namespace std::chrono_literals;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

uint64_t epoch_members(const AgentCluster& c, const std::string& name) {
  const auto doc = c.request<shoal::control::StatusReply>(name, "status");
  return doc ? doc->view.members : 0;
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
  CHECK(contains(screen.out, "(OPEN: no cluster key, --insecure)"));  // the fixture's agents run open
  CHECK(contains(screen.out, "2 member(s), 2 of them live, stable; this host included"));
  CHECK(contains(screen.out, "alive 2, suspect 0, dead 1, left 0"));
  CHECK(contains(screen.out, "-s3  (s3 dead: "));
  CHECK(contains(screen.out, " s to commit)"));

  const auto doc = c.request<shoal::control::StatusReply>("s1", "status");
  REQUIRE(doc.has_value());
  CHECK_FALSE(doc->keyed);
  const auto view = c.request<shoal::control::ViewReply>("s1", "view");
  REQUIRE(view.has_value());
  CHECK_FALSE(view->keyed);
  const auto& changes = doc->view_changes;
  REQUIRE(!changes.empty());
  const auto& last = changes.back();
  CHECK(last.left == std::vector<std::string>{"s3"});
  CHECK(last.trigger == "s3 dead");
  REQUIRE(last.seconds.has_value());
  CHECK(*last.seconds >= 0);
  CHECK(*last.seconds < 30);

  // view-history keeps the same changes (and more, once there are more than the screen's 8).
  const auto history = c.request<shoal::control::ViewHistoryReply>("s1", "view-history");
  REQUIRE(history.has_value());
  CHECK(history->self == "s1");
  CHECK(history->kept == 256);
  CHECK(history->recorded == changes.size());
  CHECK(history->view_changes == changes);
  const auto listed = run_command({SHOAL_BINARY, "status", "--history", "--control", c["s1"].control});
  CHECK(listed.exit_code == 0);
  CHECK(contains(listed.out, "history  s1: " + std::to_string(changes.size()) + " committed view(s) kept of "));
  CHECK(contains(listed.out, "-s3  (s3 dead: "));

  const auto bad = c.request_error("s1", "status now");
  REQUIRE(bad.has_value());
  CHECK(contains(*bad, "status takes no arguments"));
  const auto absent = run_command({SHOAL_BINARY, "status", "--control", c.dir() + "/nobody.sock"});
  CHECK(absent.exit_code == 1);
  CHECK(contains(absent.err, "shoal status:"));
}

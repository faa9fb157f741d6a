// Access levels that match effects, on a real agent's control socket: every request it serves has the
// level the table below gives it (a new request must be added here, with the level its effect needs); a
// user who reaches the socket through --control-group may query, and is refused every request that
// changes state or costs the cluster work, with nothing changed. The second half needs root (a child
// becomes user nobody of the control group).
#include <doctest/doctest.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <string>
#include <thread>
#include <vector>

#include "../ckpt_shm/shm_test_job.hpp"
#include "control/client.hpp"
#include "control/handlers.hpp"
#include "daemon/agent.hpp"

using shoal::control::Access;

namespace {

constexpr uid_t kNobody = 65534;

// Every request of the agent and the access its effect needs.
const std::map<std::string, Access>& expected_access() {
  static const std::map<std::string, Access> table = {
      // reads, and long polls that change nothing
      {"members", Access::query},
      {"view", Access::query},
      {"ckpt-ls", Access::query},
      {"ckpt-safe", Access::query},
      {"status", Access::query},
      {"view-history", Access::query},
      {"health", Access::query},
      {"stats", Access::query},
      {"session-info", Access::query},
      {"session-wait", Access::query},
      // a local trainer's reports: the slots' trusted writer and newest step, a member probed at once, a
      // straggler verdict that may evict; the pre-flight check probes every member
      {"ckpt-committed", Access::local},
      {"peer-lost", Access::local},
      {"health-report", Access::local},
      {"check", Access::local},
      {"drained", Access::local},
      {"trainer-stats", Access::local},
      // a view without a majority's consent
      {"view-force", Access::owner},
      // this member leaves the cluster
      {"drain", Access::owner},
      // members kept out of (or let back into) every view
      {"view-exclude", Access::owner},
      {"view-readmit", Access::owner},
  };
  return table;
}

shoal::daemon::AgentConfig config(const std::string& job, const std::string& tag) {
  shoal::daemon::AgentConfig cfg;
  cfg.name = "solo";
  cfg.bind = {"127.0.0.1", 0};
  cfg.gossip.cluster_id = "effects-test";
  cfg.ckpt.job = job;
  cfg.ckpt.store = job + "-solo";
  cfg.control_path = "/tmp/shoal-effects-" + tag + "-" + std::to_string(::getpid()) + ".sock";
  return cfg;
}

}  // namespace

TEST_CASE("every control request of the agent has the access level its effect needs") {
  shoal::ckpt::test::ShmTestJob job{"effects-table"};
  shoal::daemon::Agent agent(config(job.name(), "table"));
  REQUIRE(agent.start().ok());  // some requests are registered as the agent starts
  std::thread loop([&agent] { (void)agent.run(); });
  const auto names = agent.control().names();
  CHECK(names.size() == expected_access().size());
  for (const auto& name : names) {
    CAPTURE(name);
    const auto it = expected_access().find(name);
    REQUIRE_MESSAGE(it != expected_access().end(), "a new control request: give it the level its effect needs");
    CHECK(agent.control().access_of(name) == it->second);
  }
  agent.stop_now();
  loop.join();
}

TEST_CASE("a user of --control-group may query, and is refused every request that changes state") {
  if (::geteuid() != 0) {
    MESSAGE("not root: cannot run a client as another user here");
    return;
  }
  shoal::ckpt::test::ShmTestJob job{"effects"};
  auto cfg = config(job.name(), "group");
  cfg.control_group = kNobody;  // the socket is root:65534, mode 0660: nobody's group may connect
  shoal::daemon::Agent agent(cfg);
  REQUIRE(agent.start().ok());
  std::thread loop([&agent] { (void)agent.run(); });
  const auto owners_before = agent.checkpoints().owners().slots;

  const std::vector<std::string> changes = {"ckpt-committed 0 18446744073709551615",
                                            "peer-lost solo 1",
                                            "health-report 1 0 0 1 x",
                                            "check",
                                            "view-force yes",
                                            "drain",
                                            "drained 0 1",
                                            "trainer-stats 0 wall_s=1"};
  const std::vector<std::string> queries = {"view", "status", "members", "session-info", "ckpt-safe 0", "ckpt-ls"};
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(kNobody) != 0 || ::setuid(kNobody) != 0) ::_exit(2);
    for (size_t i = 0; i < changes.size(); ++i) {
      const auto r = shoal::control::control_request(cfg.control_path, changes[i]);
      if (!r || r->find("only the agent's user") == std::string::npos) ::_exit(static_cast<int>(10 + i));
    }
    for (size_t i = 0; i < queries.size(); ++i) {
      const auto r = shoal::control::control_request(cfg.control_path, queries[i]);
      if (!r || r->find("only the agent's user") != std::string::npos) ::_exit(static_cast<int>(30 + i));
    }
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);  // 10+i: change i was served; 30+i: query i was refused
  CHECK(agent.control().refused() == changes.size());
  // Nothing changed: the slots' writer, rank 0's newest step.
  CHECK(agent.checkpoints().owners().slots.uid == owners_before.uid);
  CHECK(agent.checkpoints().safety(0).committed == 0);
  // The agent's own user (root here) is served the same report.
  const auto mine = shoal::control::control_request(cfg.control_path, "ckpt-committed 0 3");
  REQUIRE(mine.ok());
  CHECK(mine->find("error") == std::string::npos);
  agent.stop_now();
  loop.join();
}

// An unmodified torchrun-style PyTorch DDP script (tests/integration/ddp_train.py, Gloo backend, Debian's
// python3-torch) under `shoal agent -- python3 ...` on 3 hosts on loopback: it trains as a world of 3,
// one host is killed (agent and worker, SIGKILL), and the other two restart their workers for the new
// view, resume from the script's own checkpoint and finish as a world of 2; both agents then exit 0.
// Exits 77 (skipped) when /usr/bin/python3 cannot import torch.distributed.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "../support/agent_fixture.hpp"
#include "../support/free_port.hpp"

using namespace std::chrono_literals;
using shoal::test::AgentCluster;

namespace {

const char* kPython = "/usr/bin/python3";

// The integer after "key": in one of the script's JSON lines; -1 when absent.
int field(const std::string& line, const std::string& key) {
  const std::string marker = "\"" + key + "\": ";
  const auto at = line.find(marker);
  return at == std::string::npos ? -1 : std::atoi(line.c_str() + at + marker.size());
}

struct StepLine {
  int step = -1, rank = -1, world = -1, restart = -1;
};

// Reads the agent's stdout until a worker line satisfies `want` (returned) or the time is up.
std::optional<StepLine> until_step(AgentCluster& c, const std::string& agent,
                                   const std::function<bool(const StepLine&)>& want, std::chrono::seconds timeout,
                                   std::vector<StepLine>* seen = nullptr) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    auto line = c[agent].process->read_line(500ms);
    if (!line || line->rfind("[rank ", 0) != 0 || line->find("\"step\"") == std::string::npos) continue;
    StepLine s{field(*line, "step"), field(*line, "rank"), field(*line, "world"), field(*line, "restart")};
    if (seen != nullptr) seen->push_back(s);
    if (want(s)) return s;
  }
  return std::nullopt;
}

}  // namespace

TEST_CASE("an unmodified DDP script keeps training under shoal agent after one of 3 hosts is killed") {
  if (shoal::test::run_command({kPython, "-c", "import torch.distributed as d; assert d.is_gloo_available()"}, 60s)
          .exit_code != 0) {
    MESSAGE("skipped: /usr/bin/python3 cannot import torch.distributed with Gloo (apt-get install python3-torch)");
    std::exit(77);
  }
  ::setenv("GLOO_SOCKET_IFNAME", "lo", 1);  // the workers' Gloo: loopback, like the agents
  AgentCluster c;
  const int steps = 60;
  const std::string port = std::to_string(shoal::test::free_loopback_port(shoal::test::PortProtocol::tcp));
  const std::vector<std::string> launch = {"--min-hosts",
                                           "2",
                                           "--master-port",
                                           port,
                                           "--max-restarts",
                                           "2",
                                           "--",
                                           kPython,
                                           SHOAL_SOURCE_DIR "/tests/integration/ddp_train.py",
                                           "--steps",
                                           std::to_string(steps),
                                           "--step-s",
                                           "0.1",
                                           "--ckpt",
                                           c.dir() + "/ckpt.pt"};
  c.start("a", {}, launch);
  c.start("b", {c["a"].addr}, launch);
  c.start("c", {c["a"].addr}, launch);

  // b's worker trains in the world of 3 for a while.
  auto before = until_step(
      c, "b", [](const StepLine& s) { return s.world == 3 && s.step >= 8; }, 60s);
  REQUIRE_MESSAGE(before.has_value(), "no steps as a world of 3; b's log:\n" << c.log_tail("b", 60));
  CHECK(before->restart == 0);

  // a holds rank 0 (it formed the cluster): its agent and, through PR_SET_PDEATHSIG, its worker die.
  c["a"].process->kill_and_reap();

  std::vector<StepLine> after;
  auto last = until_step(
      c, "b", [&](const StepLine& s) { return s.world == 2 && s.step == steps - 1; }, 90s, &after);
  REQUIRE_MESSAGE(last.has_value(), "b's worker never finished as a world of 2; b's log:\n" << c.log_tail("b", 80));
  const auto first_of_two = std::find_if(after.begin(), after.end(), [](const StepLine& s) { return s.world == 2; });
  REQUIRE(first_of_two != after.end());
  CHECK(first_of_two->step >= before->step - 1);  // resumed from the script's checkpoint, not step 0
  CHECK(first_of_two->restart >= 1);              // TORCHELASTIC_RESTART_COUNT of the new view
  CHECK(first_of_two->rank < 2);
  auto c_last = until_step(
      c, "c", [&](const StepLine& s) { return s.world == 2 && s.step == steps - 1; }, 30s);
  CHECK_MESSAGE(c_last.has_value(), "c's worker never finished as a world of 2; c's log:\n" << c.log_tail("c", 80));
  CHECK(c["b"].process->wait_exit(60s) == 0);
  CHECK(c["c"].process->wait_exit(60s) == 0);
  const std::string b_log = c.log_tail("b", 400);
  // The kill's failures (a collective that lost its peer) are explained by the view change, whichever
  // came first: none of them counts against --max-restarts.
  CHECK(b_log.find("(restart 1 of") == std::string::npos);
  // The new view stops the running workers, or follows their failure when the lost peer showed first.
  CHECK_MESSAGE((b_log.find("changes the ranks") != std::string::npos ||
                 b_log.find("followed the failure (not counted as a restart)") != std::string::npos),
                "b's log:\n"
                    << b_log);
}

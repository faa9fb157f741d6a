// `shoal agent -- COMMAND`: real agents on loopback launching real worker processes (shell scripts):
// torchrun's environment, output prefixed with the rank, restarts at a view change, restarts after the
// workers' own failures up to --max-restarts, SIGTERM, and the refusals of bad commands and flags.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <csignal>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "../support/agent_fixture.hpp"

using namespace std::chrono_literals;
using shoal::test::AgentCluster;

namespace {

// A worker script in the cluster's directory; `body` runs under bash.
std::string write_worker(const AgentCluster& c, const std::string& name, const std::string& body) {
  const std::string path = c.dir() + "/" + name;
  std::ofstream(path) << "#!/bin/bash\n" << body;
  ::chmod(path.c_str(), 0755);
  return path;
}

// Worker lines (those starting "[rank N] ") from an agent's stdout until `done` says stop or the time
// is up; returns them all.
std::vector<std::string> worker_lines(AgentCluster& c, const std::string& agent,
                                      const std::function<bool(const std::vector<std::string>&)>& done,
                                      std::chrono::milliseconds timeout) {
  std::vector<std::string> lines;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done(lines) && std::chrono::steady_clock::now() < deadline) {
    auto line = c[agent].process->read_line(200ms);
    if (line && line->rfind("[rank ", 0) == 0) lines.push_back(*line);
  }
  return lines;
}

// "KEY=value" words of a line into a map.
std::map<std::string, std::string> words(const std::string& line) {
  std::map<std::string, std::string> out;
  std::istringstream in(line);
  std::string w;
  while (in >> w) {
    const auto eq = w.find('=');
    if (eq != std::string::npos) out[w.substr(0, eq)] = w.substr(eq + 1);
  }
  return out;
}

const char* kEnvWorker =
    "echo env RANK=$RANK LOCAL_RANK=$LOCAL_RANK WORLD_SIZE=$WORLD_SIZE LOCAL_WORLD_SIZE=$LOCAL_WORLD_SIZE "
    "GROUP_RANK=$GROUP_RANK ROLE_RANK=$ROLE_RANK ROLE_WORLD_SIZE=$ROLE_WORLD_SIZE ROLE_NAME=$ROLE_NAME "
    "MASTER_ADDR=$MASTER_ADDR MASTER_PORT=$MASTER_PORT RESTARTS=$TORCHELASTIC_RESTART_COUNT "
    "MAX=$TORCHELASTIC_MAX_RESTARTS RUN=$TORCHELASTIC_RUN_ID CVD=$CUDA_VISIBLE_DEVICES ARGS=$*\n"
    "echo to-stderr >&2\n"
    "sleep ${WORKER_SLEEP:-1}\n";

}  // namespace

TEST_CASE("workers get torchrun's environment for the view, output prefixed by rank, and exit 0 ends the job") {
  AgentCluster c;
  const std::string worker = write_worker(c, "env.sh", kEnvWorker);
  const std::vector<std::string> launch = {"--min-hosts",    "2", "--master-port",   "29611", "--run-id", "job7",
                                           "--max-restarts", "4", "--local-rank-arg"};
  auto a_args = launch;
  a_args.insert(a_args.end(), {"--slots", "2", "--", worker, "x"});
  c.start("a", {}, a_args);
  auto b_args = launch;
  b_args.insert(b_args.end(), {"--", worker, "x"});
  c.start("b", {c["a"].addr}, b_args);

  const auto two = [](const std::vector<std::string>& l) { return l.size() >= 2; };
  const auto a_lines = worker_lines(c, "a", two, 20s);
  const auto b_lines = worker_lines(
      c, "b", [](const auto& l) { return !l.empty(); }, 20s);
  REQUIRE_MESSAGE(a_lines.size() == 2, c.log_tail("a"));
  REQUIRE_MESSAGE(b_lines.size() == 1, c.log_tail("b"));
  std::set<std::string> ranks;
  for (const auto& line : {a_lines[0], a_lines[1], b_lines[0]}) {
    auto w = words(line);
    const std::string rank = w["RANK"];
    ranks.insert(rank);
    CHECK(line.rfind("[rank " + rank + "] env ", 0) == 0);
    CHECK(w["WORLD_SIZE"] == "3");
    CHECK(w["ROLE_RANK"] == rank);
    CHECK(w["ROLE_WORLD_SIZE"] == "3");
    CHECK(w["ROLE_NAME"] == "default");
    CHECK(w["MASTER_ADDR"] == "127.0.0.1");
    CHECK(w["MASTER_PORT"] == "29611");
    CHECK(w["RESTARTS"] == "0");
    CHECK(w["MAX"] == "4");
    CHECK(w["RUN"] == "job7");
    CHECK(w["ARGS"] == "x");
    CHECK(w["--local-rank"] == w["LOCAL_RANK"]);  // --local-rank-arg appends it
    if (rank == "2") {
      CHECK(w["GROUP_RANK"] == "1");
      CHECK(w["LOCAL_RANK"] == "0");
      CHECK(w["LOCAL_WORLD_SIZE"] == "1");
      CHECK(w["CVD"] == "0");
    } else {
      CHECK(w["GROUP_RANK"] == "0");
      CHECK(w["LOCAL_RANK"] == rank);
      CHECK(w["LOCAL_WORLD_SIZE"] == "2");
      CHECK(w["CVD"] == "0,1");
    }
  }
  CHECK(ranks == std::set<std::string>{"0", "1", "2"});
  CHECK(c["a"].process->wait_exit(20s) == 0);
  CHECK(c["b"].process->wait_exit(20s) == 0);
  CHECK(c.log_tail("a", 200).find("[rank 1] to-stderr") != std::string::npos);
  CHECK(c.log_tail("a", 200).find("the job is done on this host") != std::string::npos);
}

TEST_CASE("a view change restarts the workers with the new ranks and the next restart count") {
  AgentCluster c;
  const std::string worker = write_worker(c, "env.sh", kEnvWorker);
  ::setenv("WORKER_SLEEP", "30", 1);  // long-running workers, so that the join interrupts them
  c.start("a", {}, {"--", worker});
  const auto a_first = worker_lines(
      c, "a", [](const auto& l) { return !l.empty(); }, 20s);
  ::unsetenv("WORKER_SLEEP");
  REQUIRE_MESSAGE(a_first.size() == 1, c.log_tail("a"));
  CHECK(words(a_first[0])["WORLD_SIZE"] == "1");
  ::setenv("WORKER_SLEEP", "30", 1);
  c.start("b", {c["a"].addr}, {"--", worker});
  ::unsetenv("WORKER_SLEEP");
  const auto a_next = worker_lines(
      c, "a", [](const auto& l) { return !l.empty() && words(l.back())["WORLD_SIZE"] == "2"; }, 20s);
  REQUIRE_MESSAGE(!a_next.empty(), c.log_tail("a"));
  auto w = words(a_next.back());
  CHECK(w["RANK"] == "0");
  CHECK(std::stoi(w["RESTARTS"]) >= 1);  // the view's epoch - 1
  const auto b_lines = worker_lines(
      c, "b", [](const auto& l) { return !l.empty(); }, 20s);
  REQUIRE_MESSAGE(!b_lines.empty(), c.log_tail("b"));
  CHECK(words(b_lines.back())["RESTARTS"] == w["RESTARTS"]);  // the same on every host for one view
}

TEST_CASE("a worker that keeps failing is restarted --max-restarts times, then the host leaves and exits 1") {
  AgentCluster c;
  const std::string worker = write_worker(c, "fail.sh", "echo start\nexit 3\n");
  c.start("a", {}, {"--max-restarts", "2", "--failure-grace", "0.2", "--", worker});
  CHECK(c["a"].process->wait_exit(30s) == 1);
  const std::string log = c.log_tail("a", 300);
  size_t starts = 0;
  for (size_t at = log.find("workers: started rank 0"); at != std::string::npos;
       at = log.find("workers: started rank 0", at + 1)) {
    ++starts;
  }
  CHECK(starts == 3);  // the first start and two restarts
  CHECK(log.find("exited 3") != std::string::npos);
  CHECK(log.find("--max-restarts 2): leaving the cluster") != std::string::npos);
}

TEST_CASE("SIGTERM stops the workers first, then the agent leaves and exits 0") {
  AgentCluster c;
  const std::string worker =
      write_worker(c, "term.sh", "trap 'echo got-sigterm; exit 0' TERM\necho ready\nwhile true; do sleep 0.1; done\n");
  c.start("a", {}, {"--", worker});
  const auto lines = worker_lines(
      c, "a", [](const auto& l) { return !l.empty(); }, 20s);
  REQUIRE_MESSAGE(lines.size() == 1, c.log_tail("a"));
  CHECK(lines[0] == "[rank 0] ready");
  c["a"].process->send_signal(SIGTERM);
  const auto after = worker_lines(
      c, "a", [](const auto& l) { return !l.empty(); }, 10s);
  REQUIRE(after.size() == 1);
  CHECK(after[0] == "[rank 0] got-sigterm");
  CHECK(c["a"].process->wait_exit(20s) == 0);
  CHECK(c.log_tail("a").find("leaving the cluster") != std::string::npos);
}

TEST_CASE("a command that does not exist and worker flags without a command are usage errors") {
  auto r = shoal::test::run_command(
      {SHOAL_BINARY, "agent", "--insecure", "--name", "a", "--bind", "127.0.0.1:0", "--", "no-such-trainer-program"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("'no-such-trainer-program' is not found in PATH") != std::string::npos);
  r = shoal::test::run_command({SHOAL_BINARY, "agent", "--insecure", "--name", "a", "--bind", "127.0.0.1:0", "--max-restarts", "2"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("need a command after `--`") != std::string::npos);
  r = shoal::test::run_command(
      {SHOAL_BINARY, "agent", "--insecure", "--name", "a", "--bind", "127.0.0.1:0", "--workers", "sometimes", "--", "true"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--workers: must be restart or connect, not 'sometimes'") != std::string::npos);
}

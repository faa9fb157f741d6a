// `shoal agent` as operators run it, as real processes: under Slurm with no flag but the addresses
// (two nodes on 127.0.0.1 and 127.0.0.2 form one committed view with names, cluster id, slots and
// the minimum host count all taken from the environment); under systemd, the notify messages a
// Type=notify unit receives (READY=1 once in a view, STATUS=, WATCHDOG=1, RELOADING=1 on SIGHUP,
// STOPPING=1 on SIGTERM); a config file; and the unit file passes `systemd-analyze verify`.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <thread>

#include "../support/free_port.hpp"
#include "../support/http_request.hpp"
#include "../support/process.hpp"
#include "control/client.hpp"
#include "control/replies.hpp"
#include "support/eventually.hpp"

using shoal::test::ChildProcess;
using shoal::test::free_loopback_port;
using shoal::test::PortProtocol;
using shoal::test::run_command;
using shoal::test::TempDir;
using namespace std::chrono_literals;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Sets environment variables for the children started while it lives (they inherit them).
class ScopedEnv {
 public:
  explicit ScopedEnv(std::vector<std::pair<std::string, std::string>> vars) : vars_(std::move(vars)) {
    for (const auto& [k, v] : vars_) ::setenv(k.c_str(), v.c_str(), 1);
  }
  ~ScopedEnv() {
    for (const auto& [k, v] : vars_) ::unsetenv(k.c_str());
  }

 private:
  std::vector<std::pair<std::string, std::string>> vars_;
};

// `shoal --log-level info agent FLAGS`; without the global flag when `log_level_flag` is false.
std::unique_ptr<ChildProcess> start_agent(const std::vector<std::string>& flags, const std::string& log,
                                          bool log_level_flag = true, std::string* start_line = nullptr) {
  std::vector<std::string> argv = {SHOAL_BINARY, "--log-level", "info", "agent"};
  if (!log_level_flag) argv.erase(argv.begin() + 1, argv.begin() + 3);
  if (std::find(flags.begin(), flags.end(), "--key-file") == flags.end()) argv.push_back("--insecure");
  argv.insert(argv.end(), flags.begin(), flags.end());
  auto p = std::make_unique<ChildProcess>(argv, log);
  const auto line = p->read_line(10s);
  INFO("log:\n" << read_file(log));
  REQUIRE(line.has_value());
  REQUIRE(contains(*line, " listening on "));
  if (start_line) *start_line = *line;
  return p;
}

template <class Reply>
std::optional<Reply> ask(const std::string& control, const std::string& request) {
  auto reply = shoal::control::control_request(control, request, 3s);
  if (!reply) return std::nullopt;
  auto doc = shoal::control::parse_reply<Reply>(*reply);
  if (!doc) return std::nullopt;
  return std::move(*doc);
}

// Polls every 50 ms: each check asks an agent over its control socket.
bool eventually(const std::function<bool()>& cond, std::chrono::milliseconds timeout) {
  return shoal::test::eventually(cond, timeout, 50ms);
}

// A notify socket as systemd has one: an AF_UNIX datagram socket the test reads.
class NotifySocket {
 public:
  explicit NotifySocket(const std::string& path) : path_(path) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::strncpy(sa.sun_path, path.c_str(), sizeof(sa.sun_path) - 1);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0);
  }
  ~NotifySocket() { ::close(fd_); }
  // Reads datagrams until one contains `part` (true) or the timeout passes; keeps all it read.
  bool wait_for(const std::string& part, std::chrono::milliseconds timeout) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) continue;
      received_.emplace_back(buf, static_cast<size_t>(n));
      if (contains(received_.back(), part)) return true;
    }
    return false;
  }
  std::string all() const {
    std::string out;
    for (const auto& m : received_) out += "[" + m + "]\n";
    return out;
  }

 private:
  std::string path_;
  int fd_ = -1;
  std::vector<std::string> received_;
};

}  // namespace

TEST_CASE("under Slurm two nodes form one view with names, cluster, slots and min hosts from the environment") {
  TempDir dir;
  const uint16_t port = free_loopback_port(PortProtocol::udp);
  std::vector<std::unique_ptr<ChildProcess>> agents;
  for (const char* node : {"127.0.0.1", "127.0.0.2"}) {
    ScopedEnv env({{"SLURM_JOB_ID", "4242"},
                   {"SLURM_STEP_NODELIST", "127.0.0.[1-2]"},
                   {"SLURM_STEP_NUM_NODES", "2"},
                   {"SLURMD_NODENAME", node},
                   {"SLURM_GPUS_ON_NODE", "4"}});
    // Only the addresses are given: the two agents share this machine, each on its own loopback address.
    agents.push_back(start_agent(
        {"--bind", std::string(node) + ":" + std::to_string(port), "--control", dir.path() + "/" + node + ".sock"},
        dir.path() + "/" + node + ".log"));
  }
  const std::string control = dir.path() + "/127.0.0.1.sock";
  INFO("log:\n" << read_file(dir.path() + "/127.0.0.1.log"));
  REQUIRE(eventually(
      [&] {
        auto view = ask<shoal::control::ViewReply>(control, "view");
        return view && view->epoch > 0 && view->members.size() == 2;
      },
      20s));
  auto view = ask<shoal::control::ViewReply>(control, "view");
  REQUIRE(view.has_value());
  CHECK(view->self == "127.0.0.1");
  CHECK(view->world_size == 8u);  // 2 hosts x SLURM_GPUS_ON_NODE 4
  for (const auto& m : view->members) CHECK(m.slots == 4u);
  const std::string log = read_file(dir.path() + "/127.0.0.1.log");
  CHECK(contains(log, "under Slurm: cluster id and checkpoint job slurm-4242 from SLURM_JOB_ID"));
  CHECK(contains(log, "min hosts 2 from SLURM_STEP_NUM_NODES"));
  auto ls = ask<shoal::control::CkptLsReply>(control, "ckpt-ls");
  REQUIRE(ls.has_value());
  CHECK(ls->job == "slurm-4242");
}

TEST_CASE("under Slurm a malformed node list is a usage error naming the variable") {
  ScopedEnv env({{"SLURM_JOB_ID", "7"}, {"SLURM_STEP_NODELIST", "n[3-1]"}, {"SLURMD_NODENAME", "n1"}});
  auto r = run_command({SHOAL_BINARY, "agent", "--bind", "127.0.0.1:0"});
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "SLURM_STEP_NODELIST"));
  CHECK(contains(r.err, "--no-slurm"));
}

TEST_CASE("a switch set in the config file applies: no-slurm = true ignores a malformed Slurm environment") {
  TempDir dir;
  const std::string conf = dir.path() + "/agent.conf";
  std::ofstream(conf) << "name = plain\nbind = 127.0.0.1:0\nno-slurm = true\n";
  ScopedEnv env({{"SLURM_JOB_ID", "7"}, {"SLURM_STEP_NODELIST", "n[3-1]"}, {"SLURMD_NODENAME", "n1"}});
  std::string line;
  auto agent = start_agent({"--config", conf, "--control", dir.path() + "/p.sock"}, dir.path() + "/p.log", true, &line);
  CHECK(contains(line, "shoal agent plain listening on 127.0.0.1:"));
  agent->send_signal(SIGTERM);
  CHECK(agent->wait_exit(10s) == 0);
  std::ofstream(conf) << "name = plain\nbind = 127.0.0.1:0\nno-slurm = perhaps\n";
  auto r = run_command({SHOAL_BINARY, "agent", "--config", conf});
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, conf + ":3: 'no-slurm' is a switch: true or false, not 'perhaps'"));
}

TEST_CASE("under systemd the agent notifies READY in a view, STATUS, WATCHDOG, RELOADING on SIGHUP, STOPPING") {
  TempDir dir;
  NotifySocket notify(dir.path() + "/notify.sock");
  const std::string conf = dir.path() + "/agent.conf";
  std::ofstream(conf) << "# as in packaging/shoal-agent.conf.example\nname = sd1\nbind = 127.0.0.1:0\n"
                      << "cluster = sd-test\nlog-level = info\n";
  std::unique_ptr<ChildProcess> agent;
  {
    ScopedEnv env({{"NOTIFY_SOCKET", dir.path() + "/notify.sock"}, {"WATCHDOG_USEC", "400000"}});
    // No `shoal --log-level`: the config file's log-level is the one a SIGHUP applies again.
    agent = start_agent({"--config", conf, "--control", dir.path() + "/sd1.sock"}, dir.path() + "/sd1.log", false);
  }
  INFO("log:\n" << read_file(dir.path() + "/sd1.log") << "\nnotifications:\n" << notify.all());
  CHECK(notify.wait_for("READY=1", 10s));
  CHECK(contains(notify.all(), "STATUS=epoch "));
  CHECK(notify.wait_for("WATCHDOG=1", 2s));
  agent->send_signal(SIGHUP);
  CHECK(notify.wait_for("RELOADING=1", 5s));
  CHECK(notify.wait_for("log level info", 5s));
  agent->send_signal(SIGTERM);
  CHECK(notify.wait_for("STOPPING=1", 5s));
  const auto code = agent->wait_exit(15s);
  REQUIRE(code.has_value());
  CHECK(*code == 0);
}

TEST_CASE("a config file's flags apply, the command line overrides them, and a bad line is a usage error") {
  TempDir dir;
  const std::string conf = dir.path() + "/agent.conf";
  std::ofstream(conf) << "name = from-file\nbind = 127.0.0.1:0\nslots = 3\n";
  auto agent =
      start_agent({"--config", conf, "--name", "from-cli", "--control", dir.path() + "/c.sock"}, dir.path() + "/c.log");
  REQUIRE(eventually([&] { return ask<shoal::control::ViewReply>(dir.path() + "/c.sock", "view").has_value(); }, 10s));
  auto view = ask<shoal::control::ViewReply>(dir.path() + "/c.sock", "view");
  REQUIRE(view.has_value());
  CHECK(view->self == "from-cli");

  std::ofstream(dir.path() + "/bad.conf") << "name = x\nslots four\n";
  auto r = run_command({SHOAL_BINARY, "agent", "--config", dir.path() + "/bad.conf"});
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "bad.conf:2: expected `key = value`"));
}

TEST_CASE("the systemd unit passes systemd-analyze verify") {
  const auto which = run_command({"/bin/sh", "-c", "command -v systemd-analyze"});
  if (which.exit_code != 0) {
    MESSAGE("systemd-analyze is not installed: skipping the unit check");
    return;
  }
  TempDir dir;
  // The unit as shipped, with ExecStart pointing at this build's binary (verify checks that it exists).
  std::string unit = read_file(SHOAL_SOURCE_DIR "/packaging/shoal-agent.service");
  REQUIRE_FALSE(unit.empty());
  const std::string shipped = "ExecStart=/usr/local/bin/shoal ";
  const auto at = unit.find(shipped);
  REQUIRE(at != std::string::npos);
  unit.replace(at, shipped.size(), std::string("ExecStart=") + SHOAL_BINARY + " ");
  std::ofstream(dir.path() + "/shoal-agent.service") << unit;
  std::string analyze = which.out;
  while (!analyze.empty() && (analyze.back() == '\n' || analyze.back() == ' ')) analyze.pop_back();
  const auto r = run_command({analyze, "verify", dir.path() + "/shoal-agent.service"}, 60s);
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.empty());
  CHECK(r.err.empty());
}

TEST_CASE("the example config file of packaging/ is accepted flag for flag") {
  TempDir dir;
  // Its seeds are names of a real cluster: here they do not resolve, a runtime failure (exit 1) and not a
  // usage error (exit 2), which is what a key that is not a flag, or a bad value, would give.
  const auto r = run_command(
      {SHOAL_BINARY, "agent", "--config", SHOAL_SOURCE_DIR "/packaging/shoal-agent.conf.example", "--bind",
       "127.0.0.1:0", "--control", dir.path() + "/x.sock", "--ckpt-dir", dir.path() + "/ckpt", "--join-timeout", "1",
       "--insecure"},
      30s);
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 1);
  CHECK_FALSE(contains(r.err, "see `shoal agent --help`"));
}

namespace {

using shoal::test::http_request;

uint16_t metrics_port_of(const std::string& start_line) {
  const auto at = start_line.find(" metrics ");
  REQUIRE(at != std::string::npos);
  return static_cast<uint16_t>(std::stoi(start_line.substr(start_line.rfind(':') + 1)));
}

}  // namespace

TEST_CASE("--metrics serves the Prometheus text format over real HTTP, and refuses other paths and methods") {
  TempDir dir;
  std::string line_a, line_b;
  auto a = start_agent(
      {"--name", "ma", "--bind", "127.0.0.1:0", "--control", dir.path() + "/ma.sock", "--metrics", "127.0.0.1:0"},
      dir.path() + "/ma.log", true, &line_a);
  const auto seed =
      line_a.substr(line_a.find(" listening on ") + 14, line_a.find(" control ") - line_a.find(" listening on ") - 14);
  auto b = start_agent({"--name", "mb", "--bind", "127.0.0.1:0", "--control", dir.path() + "/mb.sock", "--seeds", seed},
                       dir.path() + "/mb.log", true, &line_b);
  const uint16_t port = metrics_port_of(line_a);
  INFO("log:\n" << read_file(dir.path() + "/ma.log"));
  REQUIRE(eventually(
      [&] {
        const auto body = http_request(port, "GET", "/metrics").second;
        return contains(body, "shoal_view_members 2\n") && !contains(body, "shoal_probe_rtt_seconds_count 0\n");
      },
      20s));
  const auto [status, body] = http_request(port, "GET", "/metrics");
  CHECK(status == "HTTP/1.1 200 OK");
  CHECK(contains(body, "# TYPE shoal_members gauge\nshoal_members{state=\"alive\"} 2\n"));
  CHECK(contains(body, "# TYPE shoal_view_change_seconds histogram\n"));
  CHECK(contains(body, "shoal_view_change_seconds_count "));
  CHECK_FALSE(contains(body, "shoal_view_change_seconds_count 0\n"));  // the first view at least, timed
  CHECK(contains(body, "shoal_rejected_total{cause="));
  CHECK(contains(body, "shoal_ckpt_held_bytes{kind=\"replica\"} 0\n"));
  CHECK(http_request(port, "GET", "/other").first == "HTTP/1.1 404 Not Found");
  CHECK(http_request(port, "POST", "/metrics").first == "HTTP/1.1 405 Method Not Allowed");

  // The port is now taken: a second agent asking for it fails at start, naming it.
  const auto taken = run_command({SHOAL_BINARY, "agent", "--insecure", "--name", "mc", "--bind", "127.0.0.1:0", "--control",
                                  dir.path() + "/mc.sock", "--metrics", "127.0.0.1:" + std::to_string(port)});
  CHECK(taken.exit_code == 1);
  CHECK(contains(taken.err, "--metrics 127.0.0.1:" + std::to_string(port)));
}

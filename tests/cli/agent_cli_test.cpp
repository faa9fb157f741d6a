// `shoal agent` and `shoal members` as a user meets them: help, usage errors (exit 2), runtime
// failures (exit 1: port in use, control socket taken, join timeout), the control socket's
// handling of stale files and garbage requests, and both output formats of `shoal members`.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>

#include "../support/agent_fixture.hpp"
#include "../support/free_port.hpp"
#include "control/client.hpp"
#include "control/replies.hpp"

using shoal::test::AgentCluster;
using shoal::test::ChildProcess;
using shoal::test::CommandResult;
using shoal::test::free_loopback_port;
using shoal::test::PortProtocol;
using shoal::test::run_command;
using shoal::test::TempDir;
using namespace std::chrono_literals;

namespace {

CommandResult run_shoal(std::vector<std::string> args, std::chrono::milliseconds timeout = 20s) {
  args.insert(args.begin(), SHOAL_BINARY);
  return run_command(args, timeout);
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// Leaves a socket file behind as a crashed agent would: bound, then closed without unlink.
void make_stale_socket(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::strncpy(sa.sun_path, path.c_str(), sizeof(sa.sun_path) - 1);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0);
  ::close(fd);
}

}  // namespace

TEST_CASE("shoal agent --help documents every flag") {
  const auto r = run_shoal({"agent", "--help"});
  CHECK(r.exit_code == 0);
  for (const char* flag : {"--name", "--bind", "--seeds", "--cluster", "--control", "--join-timeout", "--advertise",
                           "--slots", "--config", "--key-file", "--no-slurm", "--workers", "--log-level", "--help"}) {
    CHECK_MESSAGE(contains(r.out, flag), flag);
  }
  // --bind is required only outside Slurm, and its help says so instead of "(required)" beside a default.
  CHECK_FALSE(contains(r.out, "(required)"));
  CHECK(contains(r.out, "Required, except under Slurm, where it is"));
  const auto members = run_shoal({"members", "--help"});
  CHECK(members.exit_code == 0);
  for (const char* flag : {"--control", "--name", "--json"}) CHECK_MESSAGE(contains(members.out, flag), flag);
  CHECK(contains(run_shoal({"--help"}).out, "members"));
}

TEST_CASE("usage errors exit 2 with a message naming the problem") {
  struct Case {
    std::vector<std::string> args;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {{"agent", "--bind", "127.0.0.1:0"}, "--name"},
      {{"agent", "--insecure", "--name", "a"}, "--bind"},
      {{"agent", "--insecure", "--name", "a", "--bind", "nowhere"}, "nowhere"},
      {{"agent", "--insecure", "--name", "a", "--bind", "127.0.0.1:99999"}, "99999"},
      {{"agent", "--insecure", "--name", "a", "--bind", "127.0.0.1:0", "--seeds", "127.0.0.1:1,"}, "--seeds"},
      {{"agent", "--insecure", "--name", "a", "--bind", "127.0.0.1:0", "--seeds", "127.0.0.1:0"}, "port 0"},
      {{"agent", "--insecure", "--name", "a", "--bind", "127.0.0.1:0", "--join-timeout", "soon"}, "--join-timeout"},
      {{"agent", "--insecure", "--name", "a b", "--bind", "127.0.0.1:0"}, "--name"},
      {{"agent", "--insecure", "--name", "a", "--bind", "127.0.0.1:0", "--frobnicate"}, "--frobnicate"},
      {{"agent", "--insecure", "--name", "a", "--bind", "127.0.0.1:0", "--slots", "many"}, "--slots: 'many' is not a whole number"},
      {{"agent", "--insecure", "--name", "a", "--bind", "127.0.0.1:0", "--hold-down", "-1"}, "--hold-down: '-1' is not a positive"},
      {{"agent", "--insecure", "--name", "a", "--bind", "127.0.0.1:0", "--seeds", "a:1 b:2"}, "--seeds: "},
      {{"agent", "--insecure", "--name", "a", "--bind", "127.0.0.1:0", "--seeds", "a:1 b:2"}, "comma-separated"},
      {{"agent", "--insecure", "--name", "a", "--bind", "127.0.0.1:0", "python3"}, "unexpected argument 'python3'"},
      {{"members", "--control", "x", "--name", "y"}, "--control excludes --name"},
      {{"members", "--bogus"}, "--bogus"},
      {{"ckpt"}, "subcommand"},
      {{"ckpt", "frob"}, "unknown subcommand 'frob'"},
      {{"view", "force", "--json"}, "--json"},
  };
  for (const auto& c : cases) {
    const auto r = run_shoal(c.args, 10s);
    INFO("args: " << c.args[0] << " " << (c.args.size() > 1 ? c.args[1] : "") << " ... stderr: " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(contains(r.err, c.expect));
  }
}

TEST_CASE("a port already in use, or a control socket held by a live agent, exits 1 and names it") {
  AgentCluster c;
  auto& a = c.start("a");
  TempDir dir;
  const auto port_taken =
      run_shoal({"agent", "--insecure", "--name", "b", "--bind", a.addr, "--control", dir.path() + "/b.sock"}, 10s);
  CHECK(port_taken.exit_code == 1);
  CHECK(contains(port_taken.err, "in use"));
  CHECK_FALSE(exists(dir.path() + "/b.sock"));

  const auto socket_taken = run_shoal({"agent", "--insecure", "--name", "b", "--bind", "127.0.0.1:0", "--control", a.control}, 10s);
  CHECK(socket_taken.exit_code == 1);
  CHECK(contains(socket_taken.err, "another agent"));
  CHECK(exists(a.control));  // the live agent's socket is left alone
  CHECK(c.view_of("a").count("a") == 1);
}

TEST_CASE("a stale control socket is replaced, a file that is not a socket is refused") {
  TempDir dir;
  const std::string stale = dir.path() + "/stale.sock";
  make_stale_socket(stale);
  ChildProcess agent({SHOAL_BINARY, "agent", "--insecure", "--name", "s", "--bind", "127.0.0.1:0", "--control", stale},
                     dir.path() + "/s.log");
  const auto line = agent.read_line(10s);
  REQUIRE(line.has_value());
  CHECK(contains(*line, "control " + stale));
  CHECK(shoal::control::control_request(stale, "members").ok());
  agent.send_signal(SIGINT);
  CHECK(agent.wait_exit(5s) == 0);
  CHECK_FALSE(exists(stale));

  const std::string regular = dir.path() + "/regular.sock";
  std::ofstream(regular) << "not a socket";
  const auto r = run_shoal({"agent", "--insecure", "--name", "r", "--bind", "127.0.0.1:0", "--control", regular}, 10s);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.err, "not a socket"));
  CHECK(exists(regular));
}

TEST_CASE("with --join-timeout an agent whose seeds never answer exits 1 naming them") {
  TempDir dir;
  const std::string seed = "127.0.0.1:" + std::to_string(free_loopback_port(PortProtocol::tcp));
  const auto r = run_shoal({"agent", "--insecure", "--name", "lonely", "--bind", "127.0.0.1:0", "--control", dir.path() + "/l.sock",
                            "--seeds", seed, "--join-timeout", "1.5"},
                           20s);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.err, "no seed answered"));
  CHECK(contains(r.err, seed));
  CHECK_FALSE(exists(dir.path() + "/l.sock"));
}

TEST_CASE("an agent with unreachable seeds keeps running and says so") {
  AgentCluster c;
  const std::string seed = "127.0.0.1:" + std::to_string(free_loopback_port(PortProtocol::tcp));
  // A short warning interval is not a flag; the default (5 s) is what the test waits for.
  c.start("hopeful", {seed});
  const bool warned = AgentCluster::eventually(
      [&] {
        return contains(c.log_tail("hopeful", 200), "no seed has answered yet") &&
               contains(c.log_tail("hopeful", 200), seed);
      },
      10s);
  CHECK(warned);
  CHECK_FALSE(c["hopeful"].process->wait_exit(0ms).has_value());
  CHECK(c.view_of("hopeful").size() == 1);
  // Started with seeds, it never forms a cluster by itself: no view of one member.
  const auto view = c.request<shoal::control::ViewReply>("hopeful", "view");
  REQUIRE(view.has_value());
  CHECK(view->epoch == 0);
  CHECK(contains(view->reason, "never forms a cluster alone"));
}

TEST_CASE("a joiner whose only seed answered and then left waits, then fails after --join-timeout") {
  AgentCluster c;
  // The seed admits nobody (--max-hosts 1): the joiner hears of it but gets no view before it leaves.
  c.start("seed", {}, {"--max-hosts", "1"});
  REQUIRE(AgentCluster::eventually(
      [&] {
        const auto v = c.request<shoal::control::ViewReply>("seed", "view");
        return v && v->epoch == 1;
      },
      10s));
  c.start("joiner", {c["seed"].addr}, {"--join-timeout", "4", "--max-hosts", "1"});
  const bool heard = AgentCluster::eventually(
      [&] { return contains(c.log_tail("joiner", 200), "joined the cluster"); }, 10s);
  REQUIRE_MESSAGE(heard, c.log_tail("joiner", 200));
  ::kill(c["seed"].process->pid(), SIGTERM);
  const auto code = c["joiner"].process->wait_exit(15s);
  REQUIRE(code.has_value());
  CHECK(*code == 1);
  const std::string log = c.log_tail("joiner", 400);
  CHECK(contains(log, "every member heard of left before a view formed"));
  CHECK(contains(log, "alone with no committed view"));
  CHECK_FALSE(contains(log, "view epoch 2 committed"));
}

TEST_CASE("shoal members prints a table, or the JSON document with --json") {
  AgentCluster c;
  c.start("alpha");
  c.start("beta", {c["alpha"].addr});
  REQUIRE(AgentCluster::eventually([&] { return c.all_see({"alpha"}, "beta", "alive"); }, 15s));

  const auto table = run_shoal({"members", "--control", c["alpha"].control}, 10s);
  CHECK(table.exit_code == 0);
  CHECK(contains(table.out, "NAME"));
  CHECK(contains(table.out, "alpha (self)"));
  CHECK(contains(table.out, c["beta"].addr));
  CHECK(contains(table.out, "alive"));
  CHECK(contains(table.out, "rejected inputs: none"));

  const auto json = run_shoal({"members", "--control", c["alpha"].control, "--json"}, 10s);
  CHECK(json.exit_code == 0);
  // The document as scripts read it: members in this order, each with its fields in this order.
  CHECK(json.out.starts_with(R"({"self":"alpha","members":[{"name":"alpha","addr":")"));
  CHECK(contains(json.out, R"(","state":"alive","incarnation":)"));
  CHECK(contains(json.out, R"(],"rejected":{"truncated":0,)"));
  auto doc = shoal::control::parse_reply<shoal::control::MembersReply>(json.out);
  REQUIRE(doc.ok());
  CHECK(doc->self == "alpha");
  REQUIRE(doc->members.size() == 2);
  CHECK(doc->members[0].name == "alpha");
  CHECK(doc->members[1].name == "beta");
  CHECK(doc->members[1].addr == c["beta"].addr);
  for (const auto& m : doc->members) {
    CHECK(m.state == "alive");
    CHECK(m.generation > 0);
  }
  for (const char* cause : {"truncated", "bad_magic", "oversized", "malformed", "bad_version", "wrong_cluster"}) {
    CHECK_MESSAGE(doc->rejected.find(cause).has_value(), cause);
  }
}

TEST_CASE("shoal members exits 1 with a clear message when no agent listens") {
  TempDir dir;
  const auto r = run_shoal({"members", "--control", dir.path() + "/nobody.sock"}, 10s);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.err, "no shoal agent is listening at " + dir.path() + "/nobody.sock"));
  // The places it looked in: each default location of the name.
  const auto by_name = run_command(
      {"/usr/bin/env", "XDG_RUNTIME_DIR=" + dir.path(), SHOAL_BINARY, "members", "--name", "no-such-agent-here"}, 10s);
  CHECK(by_name.exit_code == 1);
  CHECK(contains(by_name.err, "no shoal agent named 'no-such-agent-here'"));
  CHECK(contains(by_name.err, dir.path() + "/shoal/no-such-agent-here.sock"));
  CHECK(contains(by_name.err, "/tmp/shoal-" + std::to_string(::getuid()) + "/no-such-agent-here.sock"));
}

TEST_CASE("configuration errors are reported before the open-cluster warning, which they prevent") {
  TempDir dir;
  std::ofstream(dir.path() + "/bad.conf") << "name = a\nbind = 127.0.0.1:0\nslots = many\n";
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string expect;
  };
  const std::string control = dir.path() + "/c.sock";
  const std::vector<Case> cases = {
      {{"agent", "--insecure", "--name", "a", "--bind", "127.0.0.1:0", "--control", control, "--slots", "many"}, 2, "--slots"},
      {{"agent", "--config", dir.path() + "/bad.conf", "--control", control}, 2, "bad.conf:3: slots: 'many'"},
      {{"agent", "--config", dir.path() + "/absent.conf", "--control", control}, 2, "absent.conf"},
      {{"agent", "--name", "a", "--bind", "127.0.0.1:0", "--control", control, "--key-file", dir.path() + "/no.key"},
       2,
       "--key-file: "},
      {{"agent", "--insecure", "--name", "a", "--bind", "127.0.0.1:0", "--control", dir.path() + "/no/such/dir/c.sock"},
       1,
       "no/such"},
      {{"agent", "--insecure", "--name", "a", "--bind", "no-such-host.invalid:0", "--control", control}, 1, "--bind: "},
      // Safe by default: no key anywhere and no --insecure is a usage error that says both ways out.
      {{"agent", "--name", "a", "--bind", "127.0.0.1:0", "--control", control}, 2, "no cluster key"},
      {{"agent", "--name", "a", "--bind", "127.0.0.1:0", "--control", control}, 2, "--insecure"},
  };
  for (const auto& c : cases) {
    const auto r = run_shoal(c.args, 20s);
    INFO("args: " << c.args[1] << " " << c.args.back() << " ... stderr: " << r.err);
    CHECK(r.exit_code == c.exit_code);
    CHECK(contains(r.err, c.expect));
    CHECK_FALSE(contains(r.err, "cluster is open"));
  }
  // With a good configuration the warning still comes, once the agent runs.
  ChildProcess agent({SHOAL_BINARY, "agent", "--insecure", "--name", "open", "--bind", "127.0.0.1:0", "--control", control},
                     dir.path() + "/open.log");
  REQUIRE(agent.read_line(10s).has_value());
  agent.send_signal(SIGTERM);
  CHECK(agent.wait_exit(5s) == 0);
  std::ifstream log(dir.path() + "/open.log");
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  CHECK(contains(text, "the cluster is open"));
}

TEST_CASE("shoal ckpt --help lists its subcommands, each with its own help") {
  const auto ckpt = run_shoal({"ckpt", "--help"});
  CHECK(ckpt.exit_code == 0);
  CHECK(contains(ckpt.out, "Subcommands:"));
  CHECK(contains(ckpt.out, "\n  ls "));
  const auto ls = run_shoal({"ckpt", "ls", "--help"});
  CHECK(ls.exit_code == 0);
  CHECK(contains(ls.out, "usage: shoal ckpt ls"));
  for (const char* flag : {"--control", "--name", "--json", "--verify"}) CHECK_MESSAGE(contains(ls.out, flag), flag);
  const auto view = run_shoal({"view", "--help"});
  CHECK(view.exit_code == 0);
  CHECK(contains(view.out, "\n  force "));
  const auto force = run_shoal({"view", "force", "--help"});
  CHECK(force.exit_code == 0);
  for (const char* flag : {"--control", "--name", "--yes"}) CHECK_MESSAGE(contains(force.out, flag), flag);
}

TEST_CASE("the control socket answers unknown, empty and oversized requests with an error document") {
  AgentCluster c;
  const auto& a = c.start("ctl");
  for (const std::string& request : {std::string("frobnicate"), std::string(""), std::string(5000, 'x'),
                                     std::string("members\x01", 8), std::string("members extra")}) {
    auto reply = shoal::control::control_request(a.control, request);
    REQUIRE(reply.ok());
    auto error = shoal::control::parse_reply<shoal::control::ErrorReply>(*reply);
    REQUIRE_MESSAGE(error.ok(), *reply);
    CHECK(!error->error.empty());
    CHECK(std::find(error->requests.begin(), error->requests.end(), "members") != error->requests.end());
  }
  CHECK(c.view_of("ctl").size() == 1);  // and it still serves
  auto stats = shoal::control::control_request(a.control, "stats");
  REQUIRE(stats.ok());
  auto doc = shoal::control::parse_reply<shoal::control::StatsReply>(*stats);
  REQUIRE(doc.ok());
  CHECK(doc->self == "ctl");
  CHECK(doc->generation > 0);
  CHECK(contains(*stats, R"("gossip":{"packets_in":)"));
}

TEST_CASE("shoal members --name finds an agent at its default control path") {
  TempDir dir;
  const std::string name = "shoal-test-" + std::to_string(::getpid());
  // Where the default lands depends on the user (root: /run/shoal); the client looks in the same
  // places. XDG_RUNTIME_DIR points at our temp dir so that a non-root run stays inside it.
  const std::string env = "XDG_RUNTIME_DIR=" + dir.path();
  ChildProcess agent({"/usr/bin/env", env, SHOAL_BINARY, "agent", "--insecure", "--name", name, "--bind", "127.0.0.1:0"},
                     dir.path() + "/agent.log");
  const auto line = agent.read_line(10s);
  REQUIRE(line.has_value());
  const auto at = line->find(" control ");
  REQUIRE(at != std::string::npos);
  const std::string path = line->substr(at + 9);
  const auto r = run_command({"/usr/bin/env", env, SHOAL_BINARY, "members", "--name", name}, 10s);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.out, name + " (self)"));
  agent.send_signal(SIGTERM);
  CHECK(agent.wait_exit(5s) == 0);
  CHECK_FALSE(exists(path));
}

TEST_CASE("keygen --output writes a new key file with mode 0600 and never overwrites one; the agent runs with it") {
  TempDir dir;
  const std::string key = dir.path() + "/cluster.key";
  const auto made = run_shoal({"keygen", "--output", key});
  REQUIRE(made.exit_code == 0);
  struct stat st {};
  REQUIRE(::stat(key.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  const auto again = run_shoal({"keygen", "--output", key});
  CHECK(again.exit_code == 1);
  CHECK(contains(again.err, "never overwrites"));
  // SHOAL_KEY_FILE stands in for --key-file.
  ChildProcess agent({"/usr/bin/env", "SHOAL_KEY_FILE=" + key, SHOAL_BINARY, "agent", "--name", "keyed", "--bind",
                      "127.0.0.1:0", "--control", dir.path() + "/k.sock"},
                     dir.path() + "/keyed.log");
  REQUIRE(agent.read_line(10s).has_value());
  agent.send_signal(SIGTERM);
  CHECK(agent.wait_exit(5s) == 0);
  std::ifstream log(dir.path() + "/keyed.log");
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  CHECK(contains(text, "cluster key from SHOAL_KEY_FILE"));
  CHECK_FALSE(contains(text, "the cluster is open"));
}

TEST_CASE("shoal ckpt gc removes a dead job's segments, keeps a live agent's, and lists before --yes") {
  AgentCluster c;
  auto& a = c.start("a");
  // An unnamed job's store is named at the agent's first view (after the cluster's lineage).
  std::string live;
  REQUIRE(AgentCluster::eventually(
      [&] {
        const auto ls = run_shoal({"ckpt", "ls", "--control", a.control, "--json"});
        REQUIRE(ls.exit_code == 0);
        const auto key = ls.out.find("\"store\":\"");
        REQUIRE(key != std::string::npos);
        const auto start = key + std::strlen("\"store\":\"");
        live = ls.out.substr(start, ls.out.find('"', start) - start);
        return !live.empty();
      },
      15s));

  // A scratch directory stands in for /dev/shm, so that no other test's segments are at stake.
  TempDir shm;
  TempDir sockets;
  make_stale_socket(sockets.path() + "/gone.sock");  // a crashed agent's socket: not live
  const auto old_file = [&](const std::string& name) {
    std::ofstream(shm.path() + "/" + name) << "bytes";
    const timespec times[2] = {{0, UTIME_OMIT}, {::time(nullptr) - 3600, 0}};
    REQUIRE(::utimensat(AT_FDCWD, (shm.path() + "/" + name).c_str(), times, 0) == 0);
  };
  old_file("shoal." + live + ".r0.v0");
  old_file("shoal.crashedjob.r0.v1");
  old_file("shoal.crashedjob.p2.s40");
  old_file("not-shoals");
  REQUIRE(::symlink("/etc/hostname", (shm.path() + "/shoal.crashedjob.r1.v0").c_str()) == 0);
  const std::vector<std::string> base = {"ckpt", "gc", "--dir", shm.path(), "--control", a.control,
                                         "--control", sockets.path() + "/gone.sock"};

  auto args = base;
  const auto listed = run_shoal(args);
  INFO(listed.out << listed.err);
  CHECK(listed.exit_code == 0);
  CHECK(contains(listed.out, "would remove"));
  CHECK(contains(listed.out, "in_use"));
  CHECK(exists(shm.path() + "/shoal.crashedjob.r0.v1"));  // nothing removed without --yes

  args.insert(args.end(), {"--yes", "--json"});
  const auto removed = run_shoal(args);
  INFO(removed.out << removed.err);
  CHECK(removed.exit_code == 0);
  // The live agent's store is among the live ones (another test's embedded agent may be live as well: the
  // agents of the whole host count, not only those named with --control).
  const auto live_list = removed.out.find("\"live_stores\":[");
  REQUIRE(live_list != std::string::npos);
  const auto live_end = removed.out.find(']', live_list);
  CHECK(removed.out.substr(live_list, live_end - live_list).find("\"" + live + "\"") != std::string::npos);
  CHECK(contains(removed.out, "\"verdict\":\"refused\""));
  CHECK_FALSE(exists(shm.path() + "/shoal.crashedjob.r0.v1"));
  CHECK_FALSE(exists(shm.path() + "/shoal.crashedjob.p2.s40"));
  CHECK(exists(shm.path() + "/shoal." + live + ".r0.v0"));     // the live agent's
  CHECK(exists(shm.path() + "/shoal.crashedjob.r1.v0"));        // a link is never shoal's to remove
  CHECK(exists(shm.path() + "/not-shoals"));
}

TEST_CASE("shoal health asks an agent for node health: none reported yet, as a table and as JSON") {
  AgentCluster c;
  const auto& a = c.start("healthy");
  const auto help = run_shoal({"health", "--help"});
  CHECK(help.exit_code == 0);
  for (const char* flag : {"--control", "--name", "--json"}) CHECK_MESSAGE(contains(help.out, flag), help.out);
  CHECK(contains(run_shoal({"--help"}).out, "health"));
  const auto table = run_shoal({"health", "--control", a.control});
  CHECK(table.exit_code == 0);
  CHECK_MESSAGE(contains(table.out, "no figures yet"), table.out);
  const auto json = run_shoal({"health", "--control", a.control, "--json"});
  REQUIRE(json.exit_code == 0);
  const auto doc = shoal::control::parse_reply<shoal::control::HealthReply>(json.out);
  REQUIRE_MESSAGE(doc.ok(), json.out);
  CHECK(doc->self == "healthy");
  CHECK_FALSE(doc->reported);
  CHECK(doc->hosts.empty());
  CHECK(doc->stragglers.empty());
  CHECK(doc->rule.factor == 1.2);
  CHECK(contains(json.out, R"("hosts":[])"));
  const auto status = run_shoal({"status", "--control", a.control});
  CHECK(status.exit_code == 0);
  CHECK_MESSAGE(contains(status.out, "health   no figures yet"), status.out);
  const auto extra = run_shoal({"health", "--control", a.control, "stray"});
  CHECK(extra.exit_code == 2);
  auto raw = shoal::control::control_request(a.control, "health now");
  REQUIRE(raw.ok());
  CHECK(contains(*raw, "health takes no arguments"));
}

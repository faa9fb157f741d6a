// Who may send what on the control socket: queries for anyone who can connect, cluster-changing requests
// (view-force) for the agent's own user or root only, a local trainer's report (health-report) for its user,
// group or root, as the kernel reports the caller (SO_PEERCRED).
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "control/client.hpp"
#include "control/handlers.hpp"
#include "control/replies/errors_and_acks.hpp"
#include "control/server.hpp"
#include "control/socket_path.hpp"

using shoal::control::Access;
using shoal::control::Caller;
using shoal::control::ControlHandlers;

namespace {

ControlHandlers table() {
  ControlHandlers h;
  h.add("view", "query", [](std::span<const std::string>) { return std::string("{\"view\":1}"); });
  h.add(
      "view-force", "change", [](std::span<const std::string>) { return std::string("{\"forced\":true}"); },
      Access::owner);
  return h;
}

constexpr uint32_t kNobody = 65534;

}  // namespace

TEST_CASE("a cluster-changing request is served to the agent's user and root, refused to others") {
  const auto h = table();
  const auto self = static_cast<uint32_t>(::geteuid());
  CHECK(h.dispatch("view-force yes", Caller{self, 0, 1, true}) == "{\"forced\":true}");
  CHECK(h.dispatch("view-force yes", Caller{0, 0, 1, true}) == "{\"forced\":true}");
  CHECK(h.refused() == 0);
  if (self != kNobody) {
    const auto reply = h.dispatch("view-force yes", Caller{kNobody, kNobody, 42, true});
    const auto error = shoal::control::parse_reply<shoal::control::ErrorReply>(reply);
    REQUIRE(error.ok());
    CHECK(error->error.find("only the agent's user") != std::string::npos);
    CHECK(error->error.find("uid 65534 (pid 42)") != std::string::npos);
    CHECK(h.refused() == 1);
    // A query stays open to the same caller.
    CHECK(h.dispatch("view", Caller{kNobody, kNobody, 42, true}) == "{\"view\":1}");
  }
  // A caller the kernel could not identify never gets a change, even "as root".
  CHECK(h.dispatch("view-force yes", Caller{0, 0, 0, false}).find("could not identify") != std::string::npos);
  CHECK(h.dispatch("view", Caller{0, 0, 0, false}) == "{\"view\":1}");
}

TEST_CASE("a local trainer's report is served to the agent's user, its group and root, refused to others") {
  ControlHandlers h;
  h.add(
      "health-report", "report", [](std::span<const std::string>) { return std::string("{\"ok\":true}"); },
      Access::local);
  const auto self = static_cast<uint32_t>(::geteuid());
  const auto group = static_cast<uint32_t>(::getegid());
  CHECK(h.dispatch("health-report 1", Caller{self, kNobody, 1, true}) == "{\"ok\":true}");
  CHECK(h.dispatch("health-report 1", Caller{0, kNobody, 1, true}) == "{\"ok\":true}");
  if (self != kNobody && group != kNobody) {
    CHECK(h.dispatch("health-report 1", Caller{kNobody, group, 7, true}) == "{\"ok\":true}");
    const auto reply = h.dispatch("health-report 1", Caller{kNobody, kNobody, 42, true});
    const auto error = shoal::control::parse_reply<shoal::control::ErrorReply>(reply);
    REQUIRE(error.ok());
    CHECK(error->error.find("changes state or costs the cluster work") != std::string::npos);
    CHECK(error->error.find("uid 65534 (pid 42)") != std::string::npos);
    CHECK(h.refused() == 1);
  }
  CHECK(h.dispatch("health-report 1", Caller{0, group, 0, false}).find("could not identify") != std::string::npos);
}

TEST_CASE("over a real socket, the kernel's credentials decide: another user is refused view-force") {
  if (::geteuid() != 0) {
    MESSAGE("not root: cannot run a client as another user here; the table-level case above covers the rule");
    return;
  }
  boost::asio::io_context io;
  const auto h = table();
  shoal::control::ControlServer server(io, h);
  const std::string path = "/tmp/shoal-access-test-" + std::to_string(::getpid()) + ".sock";
  REQUIRE(server.open(path).ok());
  // The server's own mode is 0660 root:root; open it up so that the other user can connect at all and
  // the request reaches the credential check.
  REQUIRE(::chmod(path.c_str(), 0666) == 0);
  std::thread loop([&io] { io.run_for(std::chrono::seconds(20)); });

  // A child turned into user nobody sends the two requests and reports by its exit status.
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    if (::setgid(kNobody) != 0 || ::setuid(kNobody) != 0) ::_exit(10);
    const auto forced = shoal::control::control_request(path, "view-force yes");
    if (!forced || forced->find("only the agent's user") == std::string::npos) ::_exit(11);
    const auto view = shoal::control::control_request(path, "view");
    if (!view || view->rfind("{\"view\":1}", 0) != 0) ::_exit(12);
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  // The agent's own user (root here) is served.
  const auto mine = shoal::control::control_request(path, "view-force yes");
  REQUIRE(mine.ok());
  CHECK(mine->rfind("{\"forced\":true}", 0) == 0);
  CHECK(h.refused() == 1);
  io.stop();
  loop.join();
}

TEST_CASE("--control-group gives the socket to a group, mode 0660") {
  if (::geteuid() != 0) {
    MESSAGE("not root: cannot give a file to another group here");
    return;
  }
  boost::asio::io_context io;
  const auto h = table();
  shoal::control::ControlServer server(io, h);
  const std::string path = "/tmp/shoal-group-test-" + std::to_string(::getpid()) + ".sock";
  REQUIRE(server.open(path, kNobody).ok());
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK(st.st_gid == kNobody);
  CHECK((st.st_mode & 0777) == 0660);
  auto numeric = shoal::control::group_id("65534");
  REQUIRE(numeric.ok());
  CHECK(*numeric == kNobody);
  CHECK(shoal::control::group_id("root").ok());
  CHECK_FALSE(shoal::control::group_id("no-such-group-here").ok());
}

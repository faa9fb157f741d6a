// The control socket's cap on connections served at once: past it a new connection gets one error line
// and is closed, counted; a slot comes back when its connection ends; callers other than the agent's
// user and root share at most three quarters of the slots (needs root: a child becomes user nobody).
#include <doctest/doctest.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <csignal>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "control/client.hpp"
#include "control/handlers.hpp"
#include "control/server.hpp"

using namespace std::chrono_literals;

namespace {

constexpr uint32_t kNobody = 65534;

// A connection that sends nothing: it holds a slot until closed (or the server's request timeout).
int idle_connection(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  if (fd < 0 || ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) return -1;
  return fd;
}

// Waits until the server has taken `n` connections in (accepting is asynchronous).
bool wait_open(const shoal::control::ControlServer& server, size_t n) {
  for (int i = 0; i < 500; ++i) {
    if (server.open_connections() == n) return true;
    std::this_thread::sleep_for(2ms);
  }
  return false;
}

struct Served {
  boost::asio::io_context io;
  shoal::control::ControlHandlers handlers;
  shoal::control::ControlServer server{io, handlers};
  std::string path;
  std::thread loop;

  explicit Served(size_t cap, const std::string& tag)
      : path("/tmp/shoal-cap-" + tag + "-" + std::to_string(::getpid()) + ".sock") {
    handlers.add("view", "query", [](std::span<const std::string>) { return std::string("{\"view\":1}"); });
    server.max_connections = cap;
    server.request_timeout = std::chrono::milliseconds(20'000);  // idle connections keep their slots
    REQUIRE(server.open(path).ok());
    REQUIRE(::chmod(path.c_str(), 0666) == 0);
    loop = std::thread([this] { io.run_for(std::chrono::seconds(30)); });
  }
  ~Served() {
    io.stop();
    loop.join();
  }
};

}  // namespace

TEST_CASE("past the cap a control connection gets one error line and is counted; a closed one frees its slot") {
  Served s(3, "all");
  std::vector<int> held;
  for (int i = 0; i < 3; ++i) held.push_back(idle_connection(s.path));
  for (int fd : held) REQUIRE(fd >= 0);
  REQUIRE(wait_open(s.server, 3));
  const auto refused = shoal::control::control_request(s.path, "view");
  REQUIRE(refused.ok());
  CHECK(refused->find("too many control connections") != std::string::npos);
  CHECK(s.server.refused_connections() == 1);
  ::close(held.back());
  held.pop_back();
  REQUIRE(wait_open(s.server, 2));
  const auto served = shoal::control::control_request(s.path, "view");
  REQUIRE(served.ok());
  CHECK(served->rfind("{\"view\":1}", 0) == 0);
  CHECK(s.server.refused_connections() == 1);
  for (int fd : held) ::close(fd);
}

TEST_CASE("another user's connections take at most three quarters of the slots; the agent's user keeps the rest") {
  if (::geteuid() != 0) {
    MESSAGE("not root: cannot connect as another user here");
    return;
  }
  Served s(4, "others");
  // A child as nobody opens connections until refused: 3 of the 4 slots, then one error line.
  int pipefd[2];
  REQUIRE(::pipe(pipefd) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(pipefd[0]);
    if (::setgroups(0, nullptr) != 0 || ::setgid(kNobody) != 0 || ::setuid(kNobody) != 0) ::_exit(2);
    std::vector<int> mine;
    for (int i = 0; i < 3; ++i) mine.push_back(idle_connection(s.path));
    for (int fd : mine) {
      if (fd < 0) ::_exit(3);
    }
    std::this_thread::sleep_for(200ms);  // the server takes them in
    const auto r = shoal::control::control_request(s.path, "view");
    if (!r || r->find("their share") == std::string::npos) ::_exit(4);
    (void)::write(pipefd[1], "x", 1);  // holding its three: the parent checks its own slot now
    ::pause();                         // until the parent kills it
    ::_exit(0);
  }
  ::close(pipefd[1]);
  char c = 0;
  if (::read(pipefd[0], &c, 1) != 1) {  // the child ended early: its exit status says where
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    FAIL("the child exited with " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1));
  }
  // The agent's own user (root) still gets the fourth slot.
  const auto mine = shoal::control::control_request(s.path, "view");
  REQUIRE(mine.ok());
  CHECK(mine->rfind("{\"view\":1}", 0) == 0);
  CHECK(s.server.refused_connections() == 1);
  ::kill(child, SIGKILL);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  ::close(pipefd[0]);
}

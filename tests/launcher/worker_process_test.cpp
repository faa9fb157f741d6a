// One worker process: the command looked up in PATH without taking an empty entry as the current
// directory, and a worker that holds descriptors 0, 1 and 2 only, whatever the agent has open.
#include "launcher/worker_process.hpp"

#include <doctest/doctest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using shoal::launcher::resolve_program;
using shoal::launcher::spawn_worker;
using shoal::launcher::WorkerSpec;
namespace fs = std::filesystem;

namespace {

// A directory holding an executable `tool`, made the current directory for the scope (restored after).
struct ToolHere {
  fs::path dir;
  fs::path previous = fs::current_path();
  ToolHere() {
    char templ[] = "/tmp/shoal-path-XXXXXX";
    REQUIRE(::mkdtemp(templ) != nullptr);
    dir = templ;
    std::ofstream(dir / "tool") << "#!/bin/sh\nexit 0\n";
    fs::permissions(dir / "tool", fs::perms::owner_all);
    fs::current_path(dir);
  }
  ~ToolHere() {
    std::error_code ec;
    fs::current_path(previous, ec);
    fs::remove_all(dir, ec);
  }
};

// Everything `fd` yields until end of file (or 10 s).
std::string read_all(int fd) {
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  char buf[4096];
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) break;
    if (n > 0) out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

}  // namespace

TEST_CASE("an empty PATH entry is not the current directory; a '.' written out is") {
  ToolHere here;
  for (const std::string path : {":/nonexistent", "/nonexistent:", "/nonexistent::/also-not", ""}) {
    CAPTURE(path);
    auto r = resolve_program("tool", {{"PATH", path}});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("not found in PATH") != std::string::npos);
    CHECK(r.error().message.find("run ./tool") != std::string::npos);
  }
  auto dot = resolve_program("tool", {{"PATH", "/nonexistent:."}});
  REQUIRE_MESSAGE(dot.ok(), dot.error().message);
  CHECK(*dot == "./tool");
  auto named = resolve_program("./tool", {{"PATH", ""}});
  REQUIRE(named.ok());
  auto sh = resolve_program("sh", {{"PATH", ":/bin:/usr/bin"}});
  REQUIRE(sh.ok());
  CHECK(sh->front() == '/');
}

TEST_CASE("a worker holds descriptors 0, 1 and 2 only, even those the agent left inheritable") {
  // Descriptors without close-on-exec, as a library or the agent's own parent might leave them.
  int leaked_pipe[2];
  REQUIRE(::pipe(leaked_pipe) == 0);
  const int leaked_socket = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(leaked_socket >= 0);
  auto spawned = spawn_worker(WorkerSpec{{"/bin/ls", "-l", "/proc/self/fd"}, {{"PATH", "/usr/bin:/bin"}}});
  ::close(leaked_pipe[0]);
  ::close(leaked_pipe[1]);
  ::close(leaked_socket);
  REQUIRE_MESSAGE(spawned.ok(), spawned.error().message);
  const std::string listing = read_all(spawned->stdout_fd);
  int status = 0;
  REQUIRE(::waitpid(spawned->pid, &status, 0) == spawned->pid);
  ::close(spawned->stdout_fd);
  ::close(spawned->stderr_fd);
  INFO("the worker's /proc/self/fd:\n" << listing);
  CHECK(WIFEXITED(status));
  // "lrwx------ 1 root root 64 ... 3 -> /proc/1234/fd": ls's own listing of the directory is the one
  // descriptor beyond 2 that may appear.
  const std::string own_listing = "/proc/" + std::to_string(spawned->pid) + "/fd";
  std::istringstream lines(listing);
  std::vector<int> fds;
  for (std::string line; std::getline(lines, line);) {
    const auto arrow = line.find(" -> ");
    if (arrow == std::string::npos) continue;
    const auto space = line.rfind(' ', arrow - 1);
    const int fd = std::atoi(line.substr(space + 1, arrow - space - 1).c_str());
    fds.push_back(fd);
    if (fd > 2) CHECK_MESSAGE(line.substr(arrow + 4) == own_listing, line);
  }
  REQUIRE(fds.size() >= 3);
  CHECK(fds[0] == 0);
  CHECK(fds[1] == 1);
  CHECK(fds[2] == 2);
  CHECK(fds.size() <= 4);
}

// `shoal agent -- COMMAND` as real processes: the worker holds none of the agent's descriptors (its
// gossip, stream, control and metrics listeners, their connections, its pipes), and every descriptor of
// the running agent is close-on-exec, accepted connections included, so no process it starts inherits one.
#include <doctest/doctest.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../support/agent_fixture.hpp"
#include "../support/free_port.hpp"

using namespace std::chrono_literals;
using shoal::test::AgentCluster;

namespace {

// What descriptor `fd` of process `pid` is ("socket:[123]", a path), or "" when it is gone.
std::string target_of(pid_t pid, const std::string& fd) {
  char buf[512];
  const std::string link = "/proc/" + std::to_string(pid) + "/fd/" + fd;
  const ssize_t n = ::readlink(link.c_str(), buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// The descriptors (3 and up) of process `pid` that an exec would keep, each with what it is; `sockets`
// counts its sockets.
std::vector<std::string> inheritable(pid_t pid, size_t& sockets) {
  std::vector<std::string> out;
  sockets = 0;
  const std::string dir = "/proc/" + std::to_string(pid) + "/fdinfo";
  DIR* d = ::opendir(dir.c_str());
  REQUIRE(d != nullptr);
  while (const dirent* e = ::readdir(d)) {
    const std::string fd = e->d_name;
    if (fd == "." || fd == ".." || std::atoi(fd.c_str()) < 3) continue;
    std::ifstream info(dir + "/" + fd);
    unsigned long flags = 0;
    for (std::string line; std::getline(info, line);) {
      if (line.rfind("flags:", 0) == 0) flags = std::strtoul(line.c_str() + 6, nullptr, 8);  // octal
    }
    const std::string target = target_of(pid, fd);
    if (target.rfind("socket:", 0) == 0) ++sockets;
    if ((flags & O_CLOEXEC) == 0 && !target.empty()) out.push_back(fd + " -> " + target);
  }
  ::closedir(d);
  return out;
}

int connect_tcp(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  return fd;
}

int connect_unix(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  return fd;
}

uint16_t port_of(const std::string& addr) { return static_cast<uint16_t>(std::stoi(addr.substr(addr.rfind(':') + 1))); }

}  // namespace

TEST_CASE("a worker holds none of the agent's descriptors, and every descriptor of the agent is close-on-exec") {
  AgentCluster c;
  const uint16_t metrics = shoal::test::free_loopback_port(shoal::test::PortProtocol::tcp);
  // The worker lists its descriptors, then stays so that the agent keeps running while it is looked at.
  c.start("a", {},
          {"--metrics", "127.0.0.1:" + std::to_string(metrics), "--", "/bin/sh", "-c",
           "ls -l /proc/self/fd; echo listed; sleep 30"});
  std::vector<std::string> lines;
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline) {
    auto line = c["a"].process->read_line(200ms);
    if (!line || line->rfind("[rank 0] ", 0) != 0) continue;
    if (line->find("listed") != std::string::npos) break;
    lines.push_back(line->substr(9));
  }
  INFO("the worker's /proc/self/fd:\n" << [&] {
    std::string all;
    for (const auto& l : lines) all += l + "\n";
    return all;
  }() << "agent log:\n" << c.log_tail("a"));
  // `ls` runs as the shell's child: its fds are the shell's (0, 1, 2 from the agent) and its own listing.
  std::set<std::string> extra;
  for (const auto& l : lines) {
    const auto arrow = l.find(" -> ");
    if (arrow == std::string::npos) continue;
    const auto space = l.rfind(' ', arrow - 1);
    const int fd = std::atoi(l.substr(space + 1, arrow - space - 1).c_str());
    if (fd > 2 && l.find("/fd", arrow) == std::string::npos) extra.insert(l.substr(space + 1));
  }
  REQUIRE(lines.size() >= 3);
  CHECK_MESSAGE(extra.empty(), "the worker inherited: " << *extra.begin());

  // The agent with connections in: a stream connection, a control connection and a metrics scrape open.
  const int stream = connect_tcp(port_of(c["a"].addr));
  const int control = connect_unix(c["a"].control);
  const int scrape = connect_tcp(metrics);
  // Looked at until the three are accepted (well within the 1 s an unauthenticated connection may idle).
  size_t sockets = 0;
  std::set<std::string> open_across_exec;
  for (const auto until = std::chrono::steady_clock::now() + 5s; std::chrono::steady_clock::now() < until;) {
    for (auto& s : inheritable(c["a"].process->pid(), sockets)) open_across_exec.insert(std::move(s));
    if (sockets >= 7) break;
    std::this_thread::sleep_for(20ms);
  }
  for (int fd : {stream, control, scrape}) ::close(fd);
  std::string listed;
  for (const auto& s : open_across_exec) listed += s + "\n";
  CHECK_MESSAGE(open_across_exec.empty(), "descriptors of the agent without close-on-exec:\n" << listed);
  // What was looked at: UDP, the stream, control and metrics listeners, and the three connections accepted.
  CHECK(sockets >= 7);
}

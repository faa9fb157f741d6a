// Test support: a free loopback port outside the kernel's ephemeral range (see free_port.hpp).
#include "free_port.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace shoal::test {
namespace {

// Whether 127.0.0.1:port can be bound for `type` now (SOCK_STREAM or SOCK_DGRAM).
bool binds(uint16_t port, int type) {
  const int fd = ::socket(AF_INET, type, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = htons(port);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0;
  ::close(fd);
  return ok;
}

// The port ranges the kernel never hands out by itself: from 10000 to below ip_local_port_range, and above it.
std::vector<std::pair<int, int>> unassigned_spans() {
  int low = 32768, high = 60999;
  std::ifstream f("/proc/sys/net/ipv4/ip_local_port_range");
  if (!(f >> low >> high)) low = 32768, high = 60999;
  std::vector<std::pair<int, int>> spans;
  for (const auto& [a, b] : {std::pair{10000, low}, std::pair{high + 1, 65536}}) {
    if (b - a >= 1000) spans.emplace_back(a, b);
  }
  if (spans.empty()) spans.emplace_back(10000, 65536);
  return spans;
}

}  // namespace

uint16_t free_loopback_port(PortProtocol protocol) {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  std::mt19937_64 rng(static_cast<uint64_t>(::getpid()) ^ static_cast<uint64_t>(now.tv_nsec) ^
                      (static_cast<uint64_t>(now.tv_sec) << 32));
  const auto spans = unassigned_spans();
  const int first = protocol == PortProtocol::tcp ? SOCK_STREAM : SOCK_DGRAM;
  const int other = protocol == PortProtocol::tcp ? SOCK_DGRAM : SOCK_STREAM;
  for (int attempt = 0; attempt < 500; ++attempt) {
    const auto& [low, high] = spans[rng() % spans.size()];
    const auto port = static_cast<uint16_t>(low + static_cast<int>(rng() % static_cast<uint64_t>(high - low)));
    if (binds(port, first) && binds(port, other)) return port;
  }
  throw std::runtime_error("no free loopback port outside the ephemeral range after 500 tries");
}

}  // namespace shoal::test

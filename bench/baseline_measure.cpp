// memcpy and loopback-TCP baselines (plain POSIX sockets, no shoal code on the path).
#include "baseline_measure.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace shoal::bench {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

void check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string(what) + ": " + std::strerror(errno));
}

}  // namespace

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

std::vector<double> memcpy_seconds(size_t bytes, int runs) {
  std::vector<char> src(bytes, 1), dst(bytes, 0);  // both written once, so no page faults are timed
  std::vector<double> out;
  for (int r = 0; r < runs; ++r) {
    src[size_t(r) % bytes] = char(r);
    const auto t0 = Clock::now();
    std::memcpy(dst.data(), src.data(), bytes);
    out.push_back(since(t0));
    if (dst[size_t(r) % bytes] != char(r)) throw std::runtime_error("memcpy baseline: copy lost");
  }
  return out;
}

std::vector<double> tcp_loopback_seconds(size_t bytes, int runs, size_t write_bytes, bool whole_buffers) {
  std::vector<double> out;
  // Whole buffers: the bytes travel from one memory-resident buffer of `bytes` to another, as a checkpoint
  // does; otherwise one write_bytes buffer is sent again and again (it stays in the CPU's caches).
  std::vector<char> wbuf(whole_buffers ? bytes : write_bytes, 7);
  std::vector<char> rbuf(whole_buffers ? bytes : write_bytes, 0);
  for (int r = 0; r < runs; ++r) {
    const int lfd = ::socket(AF_INET, SOCK_STREAM, 0);
    check(lfd >= 0, "socket");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    check(::bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0, "bind");
    check(::listen(lfd, 1) == 0, "listen");
    socklen_t len = sizeof addr;
    check(::getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &len) == 0, "getsockname");

    Clock::time_point done;
    size_t received = 0;
    std::thread reader([&] {
      const int cfd = ::accept(lfd, nullptr, nullptr);
      if (cfd < 0) return;
      while (received < bytes) {
        char* into = whole_buffers ? rbuf.data() + received : rbuf.data();
        const size_t room = whole_buffers ? std::min(write_bytes, bytes - received) : rbuf.size();
        const ssize_t n = ::read(cfd, into, room);
        if (n <= 0) break;
        received += size_t(n);
      }
      done = Clock::now();
      ::close(cfd);
    });
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    check(fd >= 0, "socket");
    check(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0, "connect");
    const auto t0 = Clock::now();
    size_t sent = 0;
    while (sent < bytes) {
      const size_t chunk = std::min(write_bytes, bytes - sent);
      const ssize_t n = ::write(fd, wbuf.data() + (whole_buffers ? sent : 0), chunk);
      check(n > 0, "write");
      sent += size_t(n);
    }
    reader.join();
    ::close(fd);
    ::close(lfd);
    if (received != bytes) throw std::runtime_error("tcp baseline: short read");
    out.push_back(std::chrono::duration<double>(done - t0).count());
  }
  return out;
}

}  // namespace shoal::bench

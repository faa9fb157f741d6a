// memcpy, loopback-TCP and write+fsync baselines (plain POSIX calls, no shoal code on the path).
#include "baseline_measure.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
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

namespace shoal::bench {

std::vector<double> write_fsync_seconds(size_t bytes, int runs, const std::string& dir) {
  std::vector<char> buf(bytes, 5);
  std::vector<double> out;
  const std::string path = dir + "/shoal-bench-baseline." + std::to_string(::getpid());
  for (int r = 0; r < runs; ++r) {
    const auto t = std::chrono::steady_clock::now();
    const int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0) throw std::runtime_error("open " + path + ": " + std::strerror(errno));
    for (size_t done = 0; done < bytes;) {
      const ssize_t n = ::write(fd, buf.data() + done, std::min<size_t>(bytes - done, size_t{8} << 20));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ::close(fd);
        throw std::runtime_error("write " + path + ": " + std::strerror(errno));
      }
      done += static_cast<size_t>(n);
    }
    ::fsync(fd);
    ::close(fd);
    out.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count());
    ::unlink(path.c_str());
  }
  return out;
}

bool parse_sizes(std::string_view list, std::vector<size_t>* out) {
  out->clear();
  for (size_t pos = 0; pos <= list.size();) {
    const size_t comma = std::min(list.find(',', pos), list.size());
    const std::string_view text = list.substr(pos, comma - pos);
    uint64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    const std::string_view rest(end, static_cast<size_t>(text.data() + text.size() - end));
    const int shift = rest.empty() ? 0 : rest == "K" ? 10 : rest == "M" ? 20 : rest == "G" ? 30 : -1;
    if (ec != std::errc() || shift < 0 || v == 0) return false;
    out->push_back(static_cast<size_t>(v) << shift);
    pos = comma + 1;
  }
  return !out->empty();
}

}  // namespace shoal::bench

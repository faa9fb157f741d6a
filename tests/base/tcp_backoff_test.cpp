// TCP's retransmission backoff cap (base/tcp_backoff.hpp) on real loopback sockets: a socket shoal caps
// reports the cap back from the kernel, an uncapped one keeps the kernel default; a non-socket is a
// failure, not a crash. On a kernel without TCP_RTO_MAX_MS (before Linux 6.15) the cap reports
// `unsupported` and the checks of the value are skipped with a message.
#include "base/tcp_backoff.hpp"

#include <doctest/doctest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/tcp_keepalive.hpp"

namespace {

struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

TEST_CASE("a capped TCP socket reports the 1 s cap; an uncapped one keeps the kernel's default") {
  Fd capped(::socket(AF_INET, SOCK_STREAM, 0));
  Fd plain(::socket(AF_INET, SOCK_STREAM, 0));
  REQUIRE(capped.fd >= 0);
  REQUIRE(plain.fd >= 0);
  const auto r = shoal::net::cap_retransmission_backoff(capped.fd);
  if (r == shoal::net::BackoffCap::unsupported) {
    MESSAGE("skipped: this kernel has no TCP_RTO_MAX_MS (Linux 6.15+)");
    CHECK(shoal::net::retransmission_backoff_ms(plain.fd) == -1);
    return;
  }
  REQUIRE(r == shoal::net::BackoffCap::applied);
  CHECK(shoal::net::retransmission_backoff_ms(capped.fd) == 1000);
  CHECK(shoal::net::retransmission_backoff_ms(plain.fd) > 1000);  // 120000 unless the sysctl says otherwise

  // The cap survives connect() and an accepted socket takes its own.
  Fd listener(::socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  REQUIRE(::bind(listener.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(listener.fd, 1) == 0);
  REQUIRE(::getsockname(listener.fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  REQUIRE(::connect(capped.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  Fd accepted(::accept(listener.fd, nullptr, nullptr));
  REQUIRE(accepted.fd >= 0);
  CHECK(shoal::net::retransmission_backoff_ms(capped.fd) == 1000);
  CHECK(shoal::net::cap_retransmission_backoff(accepted.fd, std::chrono::milliseconds(2000)) ==
        shoal::net::BackoffCap::applied);
  CHECK(shoal::net::retransmission_backoff_ms(accepted.fd) == 2000);
}

TEST_CASE("capping what is not a TCP socket fails cleanly") {
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  Fd r(pipe_fds[0]), w(pipe_fds[1]);
  CHECK(shoal::net::cap_retransmission_backoff(r.fd) == shoal::net::BackoffCap::failed);
  CHECK(shoal::net::retransmission_backoff_ms(r.fd) == -1);
  CHECK(shoal::net::cap_retransmission_backoff(-1) == shoal::net::BackoffCap::failed);
}

TEST_CASE("SHOAL_TCP_BACKOFF_CAP_MS takes 0 (off) or the kernel's 1000..120000 ms, nothing else") {
  using std::chrono::milliseconds;
  CHECK(shoal::net::parse_backoff_cap("0") == milliseconds(0));
  CHECK(shoal::net::parse_backoff_cap("1000") == milliseconds(1000));
  CHECK(shoal::net::parse_backoff_cap("120000") == milliseconds(120000));
  for (const char* bad : {"999", "120001", "-5", "1s", "", " 1000", "1000 ", "99999999999999999999"}) {
    INFO("value: '" << bad << "'");
    CHECK_FALSE(shoal::net::parse_backoff_cap(bad).has_value());
  }
  CHECK_FALSE(shoal::net::parse_backoff_cap(nullptr).has_value());
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  CHECK(shoal::net::cap_retransmission_backoff(fd, milliseconds(0)) == shoal::net::BackoffCap::off);
  ::close(fd);
}

TEST_CASE("keepalive for collectives: probes after 2 s idle, one a second, five unanswered fail the connection") {
  Fd s(::socket(AF_INET, SOCK_STREAM, 0));
  REQUIRE(shoal::net::detect_dead_peers(s.fd));
  const auto get = [&](int level, int name) {
    int v = -1;
    socklen_t len = sizeof v;
    REQUIRE(::getsockopt(s.fd, level, name, &v, &len) == 0);
    return v;
  };
  CHECK(get(SOL_SOCKET, SO_KEEPALIVE) == 1);
  CHECK(get(IPPROTO_TCP, TCP_KEEPIDLE) == 2);
  CHECK(get(IPPROTO_TCP, TCP_KEEPINTVL) == 1);
  CHECK(get(IPPROTO_TCP, TCP_KEEPCNT) == 5);
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  Fd r(pipe_fds[0]), w(pipe_fds[1]);
  CHECK_FALSE(shoal::net::detect_dead_peers(r.fd));
}

// TCP_RTO_MAX_MS on one socket; see tcp_backoff.hpp.
#include "base/tcp_backoff.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>

#include "base/log.hpp"

// Debian 12's headers predate Linux 6.15; the value is the kernel's ABI (include/uapi/linux/tcp.h).
#ifndef TCP_RTO_MAX_MS
#define TCP_RTO_MAX_MS 44
#endif

namespace shoal::net {

std::optional<std::chrono::milliseconds> parse_backoff_cap(const char* text) {
  if (text == nullptr || *text < '0' || *text > '9') return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text, &end, 10);
  if (*end != '\0' || errno != 0 || !(v == 0 || (v >= 1000 && v <= 120000))) return std::nullopt;
  return std::chrono::milliseconds(v);
}

std::chrono::milliseconds configured_backoff_cap() {
  static const std::chrono::milliseconds cap = [] {
    const char* env = std::getenv("SHOAL_TCP_BACKOFF_CAP_MS");
    if (env == nullptr || *env == '\0') return kRetransmissionBackoffCap;
    if (const auto v = parse_backoff_cap(env)) return *v;
    log::get(log::Component::agent)
        .warn("SHOAL_TCP_BACKOFF_CAP_MS='{}' is not 0 or 1000..120000 ms: using {} ms", env,
              kRetransmissionBackoffCap.count());
    return kRetransmissionBackoffCap;
  }();
  return cap;
}

BackoffCap cap_retransmission_backoff(int fd, std::chrono::milliseconds cap) {
  if (cap.count() == 0) return BackoffCap::off;
  const int ms = static_cast<int>(cap.count());
  if (::setsockopt(fd, IPPROTO_TCP, TCP_RTO_MAX_MS, &ms, sizeof ms) == 0) return BackoffCap::applied;
  return errno == ENOPROTOOPT ? BackoffCap::unsupported : BackoffCap::failed;
}

int retransmission_backoff_ms(int fd) {
  int ms = 0;
  socklen_t len = sizeof ms;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_RTO_MAX_MS, &ms, &len) != 0) return -1;
  return ms;
}

}  // namespace shoal::net

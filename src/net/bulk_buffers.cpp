// Socket buffer sizes for bulk streams; see bulk_buffers.hpp.
#include "net/bulk_buffers.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace shoal::net {
namespace {

// The third field of a "min default max" sysctl file such as /proc/sys/net/ipv4/tcp_wmem; 0 when it
// cannot be read (then the buffer is set explicitly, the safe side).
long autotune_max(const char* path) {
  // Not std::ifstream: its descriptor would not be close-on-exec (net/cloexec.hpp says why that matters).
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char text[128] = {};
  const ssize_t n = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  long lo = 0, def = 0, max = 0;
  if (n <= 0 || std::sscanf(text, "%ld %ld %ld", &lo, &def, &max) != 3) return 0;
  return max;
}

}  // namespace

void size_for_bulk(int fd, bool loopback) {
  if (loopback) return;
  // Read once per process: the sysctls belong to the network namespace, which does not change under it.
  static const long send_max = autotune_max("/proc/sys/net/ipv4/tcp_wmem");
  static const long receive_max = autotune_max("/proc/sys/net/ipv4/tcp_rmem");
  const int bytes = kBulkBufferBytes;
  if (send_max < bytes) (void)::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
  if (receive_max < bytes) (void)::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
}

bool peer_is_loopback(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return false;
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
  }
  if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    if (IN6_IS_ADDR_LOOPBACK(&a->sin6_addr)) return true;
    return IN6_IS_ADDR_V4MAPPED(&a->sin6_addr) && a->sin6_addr.s6_addr[12] == 127;
  }
  return false;
}

}  // namespace shoal::net

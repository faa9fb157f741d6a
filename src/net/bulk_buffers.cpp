// Socket buffer sizes for bulk streams; see bulk_buffers.hpp.
#include "net/bulk_buffers.hpp"

#include <sys/socket.h>

#include <fstream>

namespace shoal::net {
namespace {

// The third field of a "min default max" sysctl file such as /proc/sys/net/ipv4/tcp_wmem; 0 when it
// cannot be read (then the buffer is set explicitly, the safe side).
long autotune_max(const char* path) {
  std::ifstream in(path);
  long lo = 0, def = 0, max = 0;
  if (!(in >> lo >> def >> max)) return 0;
  return max;
}

}  // namespace

void size_for_bulk(int fd) {
  // Read once per process: the sysctls belong to the network namespace, which does not change under it.
  static const long send_max = autotune_max("/proc/sys/net/ipv4/tcp_wmem");
  static const long receive_max = autotune_max("/proc/sys/net/ipv4/tcp_rmem");
  const int bytes = kBulkBufferBytes;
  if (send_max < bytes) (void)::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
  if (receive_max < bytes) (void)::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
}

}  // namespace shoal::net

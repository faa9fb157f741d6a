// A blocking Unix-socket client with a deadline (poll), for the short-lived CLI commands.
#include "control/client.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace shoal::control {
namespace {

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

}  // namespace

Result<std::string> control_request(const std::string& socket_path, std::string_view request,
                                    std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  sockaddr_un addr{};
  if (socket_path.size() >= sizeof(addr.sun_path)) return fail("control socket path '" + socket_path + "' is too long");
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socket_path.data(), socket_path.size());

  Fd s;
  s.fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s.fd < 0) return fail(std::string("socket: ") + std::strerror(errno));
  if (::connect(s.fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int err = errno;
    if (err == ENOENT || err == ECONNREFUSED) {
      return fail("no shoal agent is listening at " + socket_path + " (" + std::strerror(err) + ")");
    }
    return fail("cannot connect to " + socket_path + ": " + std::strerror(err));
  }
  ::fcntl(s.fd, F_SETFL, ::fcntl(s.fd, F_GETFL) | O_NONBLOCK);

  std::string out(request);
  out += '\n';
  size_t sent = 0;
  while (sent < out.size()) {
    const ssize_t n = ::send(s.fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR)
      return fail(std::string("sending the request: ") + std::strerror(errno));
    pollfd p{s.fd, POLLOUT, 0};
    if (::poll(&p, 1, remaining_ms(deadline)) == 0)
      return fail("the agent at " + socket_path + " did not take the request in time");
  }

  std::string reply;
  char buf[65536];
  while (true) {
    const ssize_t n = ::recv(s.fd, buf, sizeof(buf), 0);
    if (n > 0) {
      reply.append(buf, static_cast<size_t>(n));
      if (reply.size() > kMaxControlReplyBytes) return fail("the reply from " + socket_path + " is too large");
      continue;
    }
    if (n == 0) break;
    if (errno == EINTR) continue;
    if (errno != EAGAIN) return fail(std::string("reading the reply: ") + std::strerror(errno));
    pollfd p{s.fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, remaining_ms(deadline));
    if (ready == 0)
      return fail("the agent at " + socket_path + " did not answer within " + std::to_string(timeout.count()) + " ms");
    if (ready < 0 && errno != EINTR) return fail(std::string("poll: ") + std::strerror(errno));
  }
  return reply;
}

}  // namespace shoal::control

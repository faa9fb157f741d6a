// Close-on-exec for the sockets Asio makes. Asio opens with socket() and accepts with accept(), never with
// SOCK_CLOEXEC, so every process the agent starts (a worker of `shoal agent -- COMMAND`; in an embedded
// session, any child of the trainer) would inherit its gossip, stream, control and metrics listeners and
// every open connection across execve: a worker that outlives the agent could accept() on them, and keeps
// the port busy for the agent's restart. These open and accept with SOCK_CLOEXEC instead, so the
// descriptor is never inheritable, not even between its creation and an fcntl (another thread may fork
// then). Asio's own descriptors (epoll, eventfd, timerfd) are made close-on-exec by Asio itself.
#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/error.hpp>
#include <boost/system/error_code.hpp>
#include <cerrno>
#include <utility>

namespace shoal::net {

// Opens `socket` (an Asio socket or acceptor, closed) for `protocol`, close-on-exec from the start.
template <class Socket>
void open_cloexec(Socket& socket, const typename Socket::protocol_type& protocol, boost::system::error_code& ec) {
  const int fd = ::socket(protocol.family(), protocol.type() | SOCK_CLOEXEC, protocol.protocol());
  if (fd < 0) {
    ec.assign(errno, boost::system::system_category());
    return;
  }
  socket.assign(protocol, fd, ec);
  if (ec) ::close(fd);
}

// Like acceptor.async_accept(handler): calls handler(error_code, socket) once, with the next connection
// accepted by accept4(SOCK_CLOEXEC), or with the error (operation_aborted when the acceptor is closed).
// Waits for readiness on the acceptor (which Asio has made non-blocking) and accepts itself; a connection
// gone before it was accepted (ECONNABORTED, EPROTO) or a spurious wake-up waits again, as Asio's own
// accept does.
template <class Acceptor, class Handler>
void async_accept_cloexec(Acceptor& acceptor, Handler handler) {
  acceptor.async_wait(Acceptor::wait_read, [&acceptor, handler = std::move(handler)](
                                               boost::system::error_code ec) mutable {
    typename Acceptor::protocol_type::socket socket(acceptor.get_executor());
    if (!ec && !acceptor.is_open()) ec = boost::asio::error::operation_aborted;
    if (ec) return handler(ec, std::move(socket));
    int fd = -1;
    do {
      fd = ::accept4(acceptor.native_handle(), nullptr, nullptr, SOCK_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) {
      const int err = errno;
      if (err == EAGAIN || err == EWOULDBLOCK || err == ECONNABORTED || err == EPROTO) {
        return async_accept_cloexec(acceptor, std::move(handler));
      }
      return handler(boost::system::error_code(err, boost::system::system_category()), std::move(socket));
    }
    const auto local = acceptor.local_endpoint(ec);
    if (!ec) socket.assign(local.protocol(), fd, ec);
    if (ec) ::close(fd);
    handler(ec, std::move(socket));
  });
}

}  // namespace shoal::net

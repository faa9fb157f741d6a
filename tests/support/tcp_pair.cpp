// A loopback listener on a port the OS chooses, one connect, one accept.
#include "tcp_pair.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>

namespace shoal::test {

LoopbackTcpPair::LoopbackTcpPair() {
  const int l = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  const bool listening = l >= 0 && ::bind(l, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                         ::listen(l, 1) == 0 && ::getsockname(l, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  if (listening) {
    client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (client >= 0 && ::connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
      server = ::accept4(l, nullptr, nullptr, SOCK_CLOEXEC);
    }
  }
  if (l >= 0) ::close(l);
  if (client < 0 || server < 0) {
    this->~LoopbackTcpPair();
    throw std::runtime_error("cannot connect a TCP pair on loopback");
  }
}

LoopbackTcpPair::~LoopbackTcpPair() {
  if (client >= 0) ::close(client);
  if (server >= 0) ::close(server);
  client = server = -1;
}

int LoopbackTcpPair::release_client() {
  const int fd = client;
  client = -1;
  return fd;
}

int LoopbackTcpPair::release_server() {
  const int fd = server;
  server = -1;
  return fd;
}

}  // namespace shoal::test

// Test support: a free loopback port, chosen by the OS and released at once.
#include "free_port.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace shoal::test {

uint16_t free_loopback_port(PortProtocol protocol) {
  const int fd = ::socket(AF_INET, protocol == PortProtocol::tcp ? SOCK_STREAM : SOCK_DGRAM, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    const int err = errno;
    ::close(fd);
    throw std::runtime_error(std::string("bind 127.0.0.1:0: ") + std::strerror(err));
  }
  socklen_t len = sizeof(sa);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  ::close(fd);
  return ntohs(sa.sin_port);
}

}  // namespace shoal::test

// Test support: one HTTP/1.1 request to a port of 127.0.0.1 over a plain socket (the agent's /metrics
// endpoint), for the tests that read what an agent exports. One definition for every suite.
#pragma once

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <utility>

namespace shoal::test {

// `method target` with Connection: close; the reply's status line and its body (empty without a head).
inline std::pair<std::string, std::string> http_request(uint16_t port, const std::string& method,
                                                        const std::string& target) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0);
  const std::string request = method + " " + target + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
  REQUIRE(::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size()));
  std::string reply;
  char buf[8192];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) reply.append(buf, static_cast<size_t>(n));
  ::close(fd);
  const auto head_end = reply.find("\r\n\r\n");
  return {reply.substr(0, reply.find("\r\n")), head_end == std::string::npos ? "" : reply.substr(head_end + 4)};
}

}  // namespace shoal::test

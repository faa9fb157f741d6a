// Socket buffers for bulk streams: loopback peers are recognised and left with the kernel's buffers;
// towards another host the send buffer grows where autotuning would stop short of kBulkBufferBytes.
#include "net/bulk_buffers.hpp"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>

#include "../support/tcp_pair.hpp"

namespace {

int socket_buffer(int fd, int option) {
  int v = 0;
  socklen_t len = sizeof v;
  REQUIRE(::getsockopt(fd, SOL_SOCKET, option, &v, &len) == 0);
  return v;
}

// A connected client and an unconnected listening socket.
struct LoopbackPair {
  shoal::test::LoopbackTcpPair pair;
  int& client = pair.client;
  int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  LoopbackPair() { REQUIRE(::listen(listener, 1) == 0); }
  ~LoopbackPair() { ::close(listener); }
};

}  // namespace

TEST_CASE("a socket connected to 127.0.0.1 has a loopback peer; one not connected has none") {
  LoopbackPair p;
  CHECK(shoal::net::peer_is_loopback(p.client));
  CHECK_FALSE(shoal::net::peer_is_loopback(p.listener));
  const int unconnected = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  CHECK_FALSE(shoal::net::peer_is_loopback(unconnected));
  ::close(unconnected);
}

TEST_CASE("a loopback stream keeps the kernel's buffers; one to another host gets a large send buffer") {
  LoopbackPair p;
  const int send_before = socket_buffer(p.client, SO_SNDBUF);
  const int receive_before = socket_buffer(p.client, SO_RCVBUF);
  shoal::net::size_for_bulk(p.client, true);
  CHECK(socket_buffer(p.client, SO_SNDBUF) == send_before);
  CHECK(socket_buffer(p.client, SO_RCVBUF) == receive_before);

  std::ifstream wmem("/proc/sys/net/ipv4/tcp_wmem");
  long lo = 0, def = 0, max = 0;
  if (!(wmem >> lo >> def >> max) || max >= shoal::net::kBulkBufferBytes) return;  // autotuning reaches it
  shoal::net::size_for_bulk(p.client, false);
  // The kernel doubles the request and caps it at net.core.wmem_max (doubled): more than before, in any case.
  CHECK(socket_buffer(p.client, SO_SNDBUF) > send_before);
}

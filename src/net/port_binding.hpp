// Binding the agent's one port: a TCP listener and a UDP socket on the same address and port. With
// port 0 the OS chooses the TCP port and the UDP socket takes the same number, retried with a new
// choice when that number is taken for UDP.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>
#include <cstdint>

#include "base/result.hpp"

namespace shoal::net {

namespace asio = boost::asio;

// The UDP receive buffer asked for: gossip's datagrams that arrive while the agent's loop is stalled (a
// page-fault storm, a paused process, a burst at a seed) wait here; 4 MiB holds about 3,000 packets of
// 1,400 B. The kernel caps it at net.core.rmem_max (212,992 B by default): `udp_receive_bytes` says
// what the socket got.
inline constexpr int kGossipReceiveBufferBytes = 4 << 20;

struct BoundPort {
  asio::ip::tcp::acceptor tcp;
  asio::ip::udp::socket udp;
  uint16_t port = 0;
  int udp_receive_bytes = 0;  // the receive buffer the kernel granted (as getsockopt reports it)
};

Result<BoundPort> bind_shared_port(asio::io_context& io, const asio::ip::address& ip, uint16_t port, int attempts = 20);

}  // namespace shoal::net

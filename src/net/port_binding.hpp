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

struct BoundPort {
  asio::ip::tcp::acceptor tcp;
  asio::ip::udp::socket udp;
  uint16_t port = 0;
};

Result<BoundPort> bind_shared_port(asio::io_context& io, const asio::ip::address& ip, uint16_t port, int attempts = 20);

}  // namespace shoal::net

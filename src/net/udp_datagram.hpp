// Receiving UDP datagrams with the address each was sent to (IP_PKTINFO / IPV6_PKTINFO), which a socket
// bound to 0.0.0.0 or :: does not otherwise tell: the cluster key refuses a datagram sealed for another
// address than the one it arrived at, or the one this host advertises (wire/sealed_packet.hpp).
#pragma once

#include <boost/asio/ip/udp.hpp>
#include <cstddef>
#include <optional>
#include <span>
#include <string>

#include "base/result.hpp"

namespace shoal::net {

// Asks the kernel to report each datagram's destination address. Once, before receiving.
Status report_destinations(boost::asio::ip::udp::socket& socket);

struct Datagram {
  size_t bytes = 0;
  boost::asio::ip::udp::endpoint from;
  std::string to;  // canonical ip:port text (host_port.hpp) of the destination; empty when not reported
};

// One datagram into `buffer`, without blocking: nullopt when none is waiting. A datagram larger than
// the buffer is cut (as recvfrom does); the buffer is sized for the largest one.
Result<std::optional<Datagram>> receive_datagram(boost::asio::ip::udp::socket& socket, std::span<std::byte> buffer);

}  // namespace shoal::net

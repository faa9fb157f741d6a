// Conversions between the "ip:port" strings the gossip core uses as addresses and Asio endpoints.
// Numeric only: names are resolved once at startup, never on the event loop.
#pragma once

#include <boost/asio/ip/address.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace shoal::net {

struct IpPort {
  boost::asio::ip::address ip;
  uint16_t port = 0;
};

// "1.2.3.4:5" or "[::1]:5"; nullopt for anything else (including host names).
std::optional<IpPort> parse_ip_port(std::string_view text);

// The inverse: "1.2.3.4:5" or "[::1]:5".
std::string ip_port_text(const boost::asio::ip::address& ip, uint16_t port);

}  // namespace shoal::net

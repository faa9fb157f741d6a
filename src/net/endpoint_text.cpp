// Numeric address text <-> Asio addresses.
#include "net/endpoint_text.hpp"

#include "net/host_port.hpp"

namespace shoal::net {

std::optional<IpPort> parse_ip_port(std::string_view text) {
  auto hp = parse_host_port(text);
  if (!hp) return std::nullopt;
  boost::system::error_code ec;
  auto ip = boost::asio::ip::make_address(hp->host, ec);
  if (ec) return std::nullopt;
  return IpPort{ip, hp->port};
}

std::string ip_port_text(const boost::asio::ip::address& ip, uint16_t port) {
  if (ip.is_v6()) return "[" + ip.to_string() + "]:" + std::to_string(port);
  return ip.to_string() + ":" + std::to_string(port);
}

}  // namespace shoal::net

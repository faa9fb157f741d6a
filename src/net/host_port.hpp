// HOST:PORT text: as users type it on the command line ("10.0.0.1:7946", "node01:7946", "[::1]:7946"),
// parsed into host and port, and lists of them separated by commas (--seeds); and the numeric "ip:port"
// strings the gossip core uses as addresses, to and from Asio addresses (names are resolved once at
// startup, never on the event loop).
#pragma once

#include <boost/asio/ip/address.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"

namespace shoal::net {

struct HostPort {
  std::string host;  // without brackets, also for IPv6
  uint16_t port = 0;
  // A seed given as dns+srv:NAME: `host` is the SRV name, the port comes from each record (port is 0).
  bool srv = false;

  // "host:port", with brackets around an IPv6 host; "dns+srv:NAME" for an SRV name.
  std::string to_string() const;
  bool operator==(const HostPort&) const = default;
};

enum class PortZero { allowed, refused };

// Parses one HOST:PORT. Port 0 means "let the OS choose" and only makes sense for --bind.
Result<HostPort> parse_host_port(std::string_view text, PortZero zero = PortZero::refused);

// The prefix of a seed that names DNS SRV records (dns+srv:_shoal._tcp.job.ns.svc.cluster.local).
inline constexpr std::string_view kSrvPrefix = "dns+srv:";
// Parses dns+srv:NAME into HostPort{NAME, 0, srv = true}; NAME is a DNS name of at most 253 characters.
Result<HostPort> parse_srv_name(std::string_view text);

// Parses "a:1,b:2" (an item may be dns+srv:NAME); empty items (a trailing comma) and spaces (a list written
// "a:1 b:2") are refused so that typos are loud.
Result<std::vector<HostPort>> parse_host_port_list(std::string_view text);

struct IpPort {
  boost::asio::ip::address ip;
  uint16_t port = 0;
};

// "1.2.3.4:5" or "[::1]:5"; nullopt for anything else (including host names).
std::optional<IpPort> parse_ip_port(std::string_view text);

// The inverse: "1.2.3.4:5" or "[::1]:5".
std::string ip_port_text(const boost::asio::ip::address& ip, uint16_t port);

// An address as the cluster key names a destination (sealed packets, the connection handshake): numeric,
// and an IPv4 address mapped into IPv6 (what a dual-stack socket reports) written as IPv4, so that the
// sender's text and the receiver's agree. Text that is not a numeric ip:port is returned as it is.
std::string canonical_ip_port(std::string_view text);
std::string canonical_ip_port(const boost::asio::ip::address& ip, uint16_t port);

}  // namespace shoal::net

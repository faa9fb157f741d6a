// HOST:PORT as users type it on the command line ("10.0.0.1:7946", "node01:7946", "[::1]:7946"),
// parsed into host and port, and lists of them separated by commas (--seeds).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"

namespace shoal::net {

struct HostPort {
  std::string host;  // without brackets, also for IPv6
  uint16_t port = 0;

  // "host:port", with brackets around an IPv6 host.
  std::string to_string() const;
  bool operator==(const HostPort&) const = default;
};

enum class PortZero { allowed, refused };

// Parses one HOST:PORT. Port 0 means "let the OS choose" and only makes sense for --bind.
Result<HostPort> parse_host_port(std::string_view text, PortZero zero = PortZero::refused);

// Parses "a:1,b:2"; empty items (a trailing comma) and spaces (a list written "a:1 b:2") are refused so that
// typos are loud.
Result<std::vector<HostPort>> parse_host_port_list(std::string_view text);

}  // namespace shoal::net

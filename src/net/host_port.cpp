// Parsing of HOST:PORT and comma-separated lists of them; numeric ip:port text <-> Asio addresses.
#include "net/host_port.hpp"
#include "base/str_cat.hpp"

#include <charconv>

namespace shoal::net {

std::string HostPort::to_string() const {
  if (srv) return str_cat(kSrvPrefix, host);
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<HostPort> parse_host_port(std::string_view text, PortZero zero) {
  const std::string quoted = str_cat("'", text, "'");
  HostPort out;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos) return fail(quoted + ": missing ']' after the IPv6 address");
    out.host = std::string(text.substr(1, close - 1));
    if (close + 1 >= text.size() || text[close + 1] != ':') return fail(quoted + ": expected ':PORT' after ']'");
    port_text = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) return fail(quoted + ": expected HOST:PORT");
    if (text.find(':') != colon) return fail(quoted + ": an IPv6 address needs brackets, as in [::1]:7946");
    out.host = std::string(text.substr(0, colon));
    port_text = text.substr(colon + 1);
  }
  if (out.host.empty()) return fail(quoted + ": the host is empty");
  for (char c : out.host) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '-' || c == '_' || c == ':' || c == '%';
    if (!ok) return fail(quoted + ": the host contains '" + std::string(1, c) + "'");
  }
  if (port_text.empty()) return fail(quoted + ": the port is empty");
  unsigned port = 0;
  const auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port > 65535) {
    return fail(quoted + ": the port must be a number from 0 to 65535");
  }
  if (port == 0 && zero == PortZero::refused) return fail(quoted + ": port 0 is not a reachable port");
  out.port = static_cast<uint16_t>(port);
  return out;
}

Result<HostPort> parse_srv_name(std::string_view text) {
  const std::string quoted = str_cat("'", text, "'");
  if (!text.starts_with(kSrvPrefix)) return fail(quoted + ": expected dns+srv:NAME");
  const std::string_view name = text.substr(kSrvPrefix.size());
  // A DNS name: at most 253 bytes of letters, digits, '-', '_' (SRV labels: _service._proto) and dots.
  if (name.empty() || name.size() > 253) return fail(quoted + ": the SRV name must have 1 to 253 characters");
  for (char c : name) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
    if (!ok)
      return fail(quoted + ": the SRV name contains '" + std::string(1, c) + "' (the port comes from the records)");
  }
  return HostPort{std::string(name), 0, true};
}

Result<std::vector<HostPort>> parse_host_port_list(std::string_view text) {
  const std::string whole(text);
  // "a:1 b:2" would otherwise be read as one HOST:PORT with a strange host (and an IPv6 hint).
  if (whole.find_first_of(" \t\n") != std::string::npos) {
    return fail("'" + whole + "': the list is comma-separated, without spaces (HOST:PORT,HOST:PORT)");
  }
  std::vector<HostPort> out;
  while (true) {
    const auto comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    if (item.empty()) return fail("empty entry in the list '" + whole + "'");
    auto hp = item.starts_with(kSrvPrefix) ? parse_srv_name(item) : parse_host_port(item);
    if (!hp) return fail(hp.error().message);
    out.push_back(std::move(*hp));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

std::optional<IpPort> parse_ip_port(std::string_view text) {
  auto hp = parse_host_port(text);
  if (!hp) return std::nullopt;
  boost::system::error_code ec;
  auto ip = boost::asio::ip::make_address(hp->host, ec);
  if (ec) return std::nullopt;
  return IpPort{ip, hp->port};
}

std::string ip_port_text(const boost::asio::ip::address& ip, uint16_t port) {
  return HostPort{ip.to_string(), port}.to_string();
}

std::string canonical_ip_port(const boost::asio::ip::address& ip, uint16_t port) {
  if (ip.is_v6() && ip.to_v6().is_v4_mapped()) {
    return ip_port_text(boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, ip.to_v6()), port);
  }
  return ip_port_text(ip, port);
}

std::string canonical_ip_port(std::string_view text) {
  const auto parsed = parse_ip_port(text);
  return parsed ? canonical_ip_port(parsed->ip, parsed->port) : std::string(text);
}

}  // namespace shoal::net

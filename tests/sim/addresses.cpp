// Parsing and formatting of simulated member names and addresses.
#include "addresses.hpp"

#include <charconv>

namespace shoal::sim {
namespace {

// Reads a decimal number in [0, max] at s[pos...], advancing pos.
std::optional<uint32_t> read_number(std::string_view s, size_t& pos, uint32_t max) {
  uint32_t v = 0;
  const auto [end, ec] = std::from_chars(s.data() + pos, s.data() + s.size(), v);
  if (ec != std::errc() || v > max) return std::nullopt;
  pos = static_cast<size_t>(end - s.data());
  return v;
}

}  // namespace

std::string member_name(uint32_t index) { return "m" + std::to_string(index); }

std::string member_addr(uint32_t index) {
  return "10.0." + std::to_string(index / 256) + "." + std::to_string(index % 256) + ":" + std::to_string(kGossipPort);
}

std::optional<uint32_t> index_of_addr(std::string_view addr) {
  if (addr.substr(0, 5) != "10.0.") return std::nullopt;
  size_t pos = 5;
  const auto x = read_number(addr, pos, 255);
  if (!x || pos >= addr.size() || addr[pos] != '.') return std::nullopt;
  ++pos;
  const auto y = read_number(addr, pos, 255);
  if (!y || pos >= addr.size() || addr[pos] != ':') return std::nullopt;
  ++pos;
  const auto port = read_number(addr, pos, 65535);
  if (!port || *port != kGossipPort || pos != addr.size()) return std::nullopt;
  return *x * 256 + *y;
}

std::optional<uint32_t> index_of_name(std::string_view name) {
  if (name.size() < 2 || name[0] != 'm') return std::nullopt;
  size_t pos = 1;
  if (name.size() > 2 && name[1] == '0') return std::nullopt;  // one spelling per member
  const auto i = read_number(name, pos, kMaxMembers - 1);
  if (!i || pos != name.size()) return std::nullopt;
  return i;
}

}  // namespace shoal::sim

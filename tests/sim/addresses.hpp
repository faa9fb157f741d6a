// How simulated members are named and addressed: member i is "m<i>" at "10.0.<i/256>.<i%256>:7946",
// and both map back to i without a lookup table.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace shoal::sim {

inline constexpr uint32_t kMaxMembers = 65536;  // what 10.0.x.y can address
inline constexpr uint16_t kGossipPort = 7946;

std::string member_name(uint32_t index);
std::string member_addr(uint32_t index);
// The index of a simulated address or name, or nullopt for anything else.
std::optional<uint32_t> index_of_addr(std::string_view addr);
std::optional<uint32_t> index_of_name(std::string_view name);

}  // namespace shoal::sim

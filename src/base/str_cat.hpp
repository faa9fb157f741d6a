// str_cat: one string from pieces, appended into a buffer reserved once. Also the way around a false
// positive of GCC 12 at -O3 (the wheel's release build): `"literal" + std::string(...)` inlines
// operator+(const char*, string&&), in which GCC reports a -Wrestrict or -Wstringop-overflow memcpy of
// 2^63 bytes that cannot happen (GCC bug 105329).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace shoal {

template <typename... Pieces>
std::string str_cat(const Pieces&... pieces) {
  const std::string_view views[] = {std::string_view(pieces)...};
  size_t size = 0;
  for (const auto& v : views) size += v.size();
  std::string out;
  out.reserve(size);
  for (const auto& v : views) out.append(v);
  return out;
}

// "a, b, c": names for a message (empty for none).
inline std::string joined(const std::vector<std::string>& names, std::string_view sep = ", ") {
  std::string out;
  for (const auto& n : names) {
    if (!out.empty()) out.append(sep);
    out.append(n);
  }
  return out;
}

}  // namespace shoal

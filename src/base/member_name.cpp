// The member-name rule.
#include "base/member_name.hpp"

namespace shoal {

Status check_member_name(const std::string& name) {
  if (name.empty()) return fail("the member name must not be empty");
  if (name.size() > kMaxNameBytes) {
    return fail("the member name is longer than " + std::to_string(kMaxNameBytes) + " bytes");
  }
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7F) return fail("the member name must not contain spaces or control characters");
  }
  return Ok{};
}

}  // namespace shoal

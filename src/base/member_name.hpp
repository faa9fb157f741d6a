// What a member name may be: the same rule for `shoal agent --name` and an embedded session.
#pragma once

#include <string>

#include "base/result.hpp"

namespace shoal {

inline constexpr size_t kMaxNameBytes = 128;

// Non-empty, at most kMaxNameBytes, no spaces or control characters.
Status check_member_name(const std::string& name);

}  // namespace shoal

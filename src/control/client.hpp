// The client side of the control socket, used by `shoal members` and the like: send one request
// line, read the JSON reply until the agent closes. Blocking, with a deadline.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "base/result.hpp"

namespace shoal::control {

// Replies larger than this are cut off with an error (a member list of 10,000 hosts is ~1 MiB).
inline constexpr size_t kMaxControlReplyBytes = 64u << 20;

// Sends `request` (a newline is added) to the agent listening at `socket_path` and returns its reply.
// Errors say plainly when no agent listens there.
Result<std::string> control_request(const std::string& socket_path, std::string_view request,
                                    std::chrono::milliseconds timeout = std::chrono::seconds(5));

}  // namespace shoal::control

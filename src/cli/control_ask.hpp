// One request to a running agent for a CLI command: find its control socket (--control or --name),
// send the request, parse the JSON reply, and turn every failure into a message and an exit status.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "control/json_reader.hpp"

namespace shoal::cli {

// Calls `print(document, raw reply)` on success and returns what it returns; otherwise prints why to
// stderr as "WHO: ..." and returns kExitUsage (both --control and --name) or kExitFailure.
int ask_agent(const std::string& who, const std::optional<std::string>& control, const std::optional<std::string>& name,
              const std::string& request,
              const std::function<int(const control::JsonValue&, const std::string&)>& print);

}  // namespace shoal::cli

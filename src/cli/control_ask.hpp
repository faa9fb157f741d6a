// One request to a running agent for a CLI command: the --control/--name flags that every such command takes
// and the control socket they name, the request, the JSON reply, and every failure as a message and an exit
// status.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "base/result.hpp"
#include "control/json_reader.hpp"

namespace CLI {
class App;
}

namespace shoal::cli {

// The flag block of the query commands (members, view, status, ckpt ...): --control PATH and --name NAME,
// which exclude each other, bound to `control` and `name`.
void add_agent_socket_flags(CLI::App& app, std::optional<std::string>& control, std::optional<std::string>& name);

// The control socket those flags name: --control, else the one of --name, else the only agent on this
// machine; the error says where it looked.
Result<std::string> agent_socket(const std::optional<std::string>& control, const std::optional<std::string>& name);

// Calls `print(document, raw reply)` on success and returns what it returns; otherwise prints why to
// stderr as "WHO: ..." and returns kExitFailure.
int ask_agent(const std::string& who, const std::optional<std::string>& control, const std::optional<std::string>& name,
              const std::string& request,
              const std::function<int(const control::JsonValue&, const std::string&)>& print);

}  // namespace shoal::cli

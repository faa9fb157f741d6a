// Asking a running agent one control request on behalf of a CLI command.
#include "cli/control_ask.hpp"

#include "control/client.hpp"
#include "control/socket_path.hpp"

namespace shoal::cli {

std::optional<AgentAnswer> ask_agent_document(const std::string& who, const std::optional<std::string>& control,
                                              const std::optional<std::string>& name, const std::string& request,
                                              int& exit_code) {
  exit_code = kExitFailure;
  if (control && name) {
    std::cerr << who << ": give --control or --name, not both\n";
    exit_code = kExitUsage;
    return std::nullopt;
  }
  auto path = control::choose_control_socket(control, name);
  if (!path) {
    std::cerr << who << ": " << path.error().message << "\n";
    return std::nullopt;
  }
  auto reply = control::control_request(*path, request);
  if (!reply) {
    std::cerr << who << ": " << reply.error().message << "\n";
    return std::nullopt;
  }
  auto doc = control::parse_document(*reply);
  if (!doc) {
    std::cerr << who << ": the agent at " << *path << " sent an unreadable reply: " << doc.error().message << "\n";
    return std::nullopt;
  }
  if (const auto error = control::error_of(*doc)) {
    std::cerr << who << ": " << *error << "\n";
    return std::nullopt;
  }
  exit_code = kExitOk;
  return AgentAnswer{*path, std::move(*reply), std::move(*doc)};
}

}  // namespace shoal::cli

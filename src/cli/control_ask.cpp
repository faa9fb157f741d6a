// Asking a running agent one control request on behalf of a CLI command.
#include "cli/control_ask.hpp"

#include <iostream>

#include "cli/cli.hpp"
#include "control/client.hpp"
#include "control/socket_path.hpp"

namespace shoal::cli {

int ask_agent(const std::string& who, const std::optional<std::string>& control, const std::optional<std::string>& name,
              const std::string& request,
              const std::function<int(const control::JsonValue&, const std::string&)>& print) {
  if (control && name) {
    std::cerr << who << ": give --control or --name, not both\n";
    return kExitUsage;
  }
  auto path = control::choose_control_socket(control, name);
  if (!path) {
    std::cerr << who << ": " << path.error().message << "\n";
    return kExitFailure;
  }
  auto reply = control::control_request(*path, request);
  if (!reply) {
    std::cerr << who << ": " << reply.error().message << "\n";
    return kExitFailure;
  }
  auto doc = control::parse_json(*reply);
  if (!doc) {
    std::cerr << who << ": the agent at " << *path << " sent an unreadable reply: " << doc.error().message << "\n";
    return kExitFailure;
  }
  if (const control::JsonValue* err = doc->find("error")) {
    std::cerr << who << ": " << err->as_string().value_or("?") << "\n";
    return kExitFailure;
  }
  return print(*doc, *reply);
}

}  // namespace shoal::cli

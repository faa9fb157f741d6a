// Asking a running agent one control request on behalf of a CLI command.
#include "agent/control_ask.hpp"

#include <iostream>

#include "agent/cli.hpp"
#include "agent/control_client.hpp"
#include "agent/control_path.hpp"

namespace shoal::agent {

int ask_agent(const std::string& who, const std::optional<std::string>& control, const std::optional<std::string>& name,
        const std::string& request, const std::function<int(const JsonValue&, const std::string&)>& print) {
  if (control && name) {
    std::cerr << who << ": give --control or --name, not both\n";
    return kExitUsage;
  }
  auto path = choose_control_socket(control, name);
  if (!path) {
    std::cerr << who << ": " << path.error().message << "\n";
    return kExitFailure;
  }
  auto reply = control_request(*path, request);
  if (!reply) {
    std::cerr << who << ": " << reply.error().message << "\n";
    return kExitFailure;
  }
  auto doc = parse_json(*reply);
  if (!doc) {
    std::cerr << who << ": the agent at " << *path << " sent an unreadable reply: " << doc.error().message << "\n";
    return kExitFailure;
  }
  if (const JsonValue* err = doc->find("error")) {
    std::cerr << who << ": " << err->as_string().value_or("?") << "\n";
    return kExitFailure;
  }
  return print(*doc, *reply);
}

}  // namespace shoal::agent

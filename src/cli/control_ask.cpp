// Asking a running agent one control request on behalf of a CLI command.
#include "cli/control_ask.hpp"

#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/cli.hpp"
#include "control/client.hpp"
#include "control/socket_path.hpp"

namespace shoal::cli {

void add_agent_socket_flags(CLI::App& app, std::optional<std::string>& control, std::optional<std::string>& name) {
  CLI::Option* by_path = app.add_option("--control", control, "the agent's control socket")->type_name("PATH");
  CLI::Option* by_name =
      app.add_option("--name", name, "the agent's member name (its socket is looked up in the default places)")
          ->type_name("NAME");
  by_path->excludes(by_name);
}

Result<std::string> agent_socket(const std::optional<std::string>& control, const std::optional<std::string>& name) {
  return control::choose_control_socket(control, name);
}

std::optional<AgentAnswer> ask_agent_document(const std::string& who, const std::optional<std::string>& control,
                                              const std::optional<std::string>& name, const std::string& request,
                                              int& exit_code, std::chrono::milliseconds timeout) {
  exit_code = kExitFailure;
  auto path = agent_socket(control, name);
  if (!path) {
    std::cerr << who << ": " << path.error().message << "\n";
    return std::nullopt;
  }
  auto reply = control::control_request(*path, request, timeout);
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

// `shoal members`: asks a running agent, over its control socket, for its member list and prints it
// as a table (or as the agent's JSON document with --json).
#include <iostream>

#include "cli/cli.hpp"
#include "cli/command_line.hpp"
#include "cli/control_ask.hpp"
#include "cli/members_table.hpp"
#include "control/client.hpp"
#include "control/replies/members.hpp"
#include "control/socket_path.hpp"

namespace shoal::cli {

int members_command(std::span<const std::string> args) {
  std::optional<std::string> control, name;
  bool json = false;
  auto app = command_app("shoal members", "shoal members [--control PATH | --name NAME] [--json]",
                         "Print a running agent's view of the cluster: every member with its address, state (alive,\n"
                         "suspect, dead, left), incarnation and generation, and the inputs it refused by cause.\n"
                         "Without --control or --name, asks the only agent running on this machine.\n"
                         "Exit status: 0 on success, 1 when no agent answers, 2 on a usage error.");
  add_agent_socket_flags(*app, control, name);
  app->add_flag("--json", json, "print the agent's JSON document: {\"self\", \"members\": [...], \"rejected\": {...}}");
  if (auto done = parse_command(*app, args)) return *done;
  auto path = agent_socket(control, name);
  if (!path) {
    std::cerr << "shoal members: " << path.error().message << "\n";
    return kExitFailure;
  }
  auto reply = control::control_request(*path, "members");
  if (!reply) {
    std::cerr << "shoal members: " << reply.error().message << "\n";
    return kExitFailure;
  }
  auto doc = control::parse_document(*reply);
  if (!doc) {
    std::cerr << "shoal members: the agent at " << *path << " sent an unreadable reply: " << doc.error().message
              << "\n";
    return kExitFailure;
  }
  if (const auto err = control::error_of(*doc)) {
    std::cerr << "shoal members: the agent refused: " << *err << "\n";
    return kExitFailure;
  }
  auto members = control::read_reply<control::MembersReply>(*doc);
  if (!members) {
    std::cerr << "shoal members: the agent at " << *path << " sent an unexpected reply: " << members.error().message
              << "\n";
    return kExitFailure;
  }
  if (json) {
    std::cout << *reply;
    if (reply->empty() || reply->back() != '\n') std::cout << "\n";
    return kExitOk;
  }
  std::cout << render_members_table(*members);
  return kExitOk;
}

}  // namespace shoal::cli

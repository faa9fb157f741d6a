// `shoal view`: asks a running agent for the committed view, its status and the ranks; and
// `shoal view force --yes`, the operator's override when a majority of the last view is lost.
#include <iostream>

#include "cli/cli.hpp"
#include "cli/command_line.hpp"
#include "cli/control_ask.hpp"
#include "daemon/reports/view_report.hpp"

namespace shoal::cli {
namespace {

constexpr int kExitNotReady = 3;  // --ready: the agent answers but is no member of a committed view

int force_command(const std::optional<std::string>& control, const std::optional<std::string>& name, bool yes) {
  if (!yes) {
    std::cerr << "shoal view force: refusing without --yes (read `shoal view force --help` for the risk)\n";
    return kExitUsage;
  }
  return ask_agent("shoal view force", control, name, "view-force yes",
                   [](const control::ForceReply& doc, const std::string&) {
                     if (!doc.forced) {
                       std::cerr << "shoal view force: not forced: " << doc.error.value_or("?") << "\n";
                       return kExitFailure;
                     }
                     std::cout << "forced: committed epoch " << doc.epoch << "\n";
                     return kExitOk;
                   });
}

}  // namespace

int view_command(std::span<const std::string> args) {
  std::optional<std::string> control, name;
  bool json = false, yes = false, ready = false;
  auto app = command_app("shoal view",
                         "shoal view [--control PATH | --name NAME] [--json | --ready]\n"
                         "shoal view force [--control PATH | --name NAME] --yes",
                         "Print a running agent's committed view: epoch, hash, status (forming, stable, proposing, or\n"
                         "stalled with its reason), the members and the ranks derived from them.\n"
                         "Exit status: 0 on success, 1 when no agent answers, 2 on a usage error, 3 with --ready when\n"
                         "the agent is not a member of a committed view.");
  add_agent_socket_flags(*app, control, name);
  CLI::Option* json_flag = app->add_flag("--json", json, "print the agent's JSON document");
  CLI::Option* ready_flag = app->add_flag("--ready", ready,
                                          "print nothing and exit 0 when the agent is a member of a committed "
                                          "view, else say why on stderr and exit 3 (a readiness probe)");
  ready_flag->excludes(json_flag);
  CLI::App* force =
      add_command(*app, "force", "shoal view force [--control PATH | --name NAME] --yes",
                  "Operator override for a job that lost a majority of its last view at once (a rack, a switch).\n"
                  "The survivors stall rather than risk a split; this tells the asked agent to commit the next view\n"
                  "from the members it sees alive, needing only their acceptance.\n"
                  "RISK: if the members it believes lost are in fact alive on the other side of a partition and\n"
                  "are forced too, the job splits into two jobs with the same epoch. Force one side only, and\n"
                  "only when the other side is known to be down.\n"
                  "Exit status: 0 when the view was committed, 1 when it was not (the reason is printed).");
  add_agent_socket_flags(*force, control, name);
  force->add_flag("--yes", yes, "confirm that the lost members are down (required)");
  force->excludes(json_flag);
  force->excludes(ready_flag);
  if (auto done = parse_command(*app, args)) return *done;
  if (force->parsed()) return force_command(control, name, yes);
  return ask_agent("shoal view", control, name, "view", [json, ready](const control::ViewReply& doc,
                                                                      const std::string& raw) {
    if (ready) {
      if (doc.epoch >= 1 && doc.in_view) return kExitOk;
      std::cerr << "shoal view: not ready: " << (doc.epoch == 0 ? "no committed view yet" : "not a member of view " +
                                                  std::to_string(doc.epoch))
                << " (" << doc.status << (doc.reason.empty() ? "" : ": " + doc.reason) << ")\n";
      return kExitNotReady;
    }
    if (json) {
      std::cout << raw << (raw.empty() || raw.back() != '\n' ? "\n" : "");
      return kExitOk;
    }
    std::cout << daemon::render_view_table(doc);
    return kExitOk;
  });
}

}  // namespace shoal::cli

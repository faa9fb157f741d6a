// `shoal view`: asks a running agent for the committed view, its status and the ranks; and
// `shoal view force --yes`, the operator's override when a majority of the last view is lost; and
// `shoal view exclude NAME...` / `readmit NAME...`, the operator's hold on hosts that keep failing.
#include <iostream>

#include "base/str_cat.hpp"
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

// `view-exclude` / `view-readmit`: waits for the committed view that carries the change.
int exclude_command(const std::optional<std::string>& control, const std::optional<std::string>& name,
                    const std::vector<std::string>& names, bool excluding) {
  const std::string who = excluding ? "shoal view exclude" : "shoal view readmit";
  std::string line = excluding ? "view-exclude" : "view-readmit";
  for (const auto& n : names) {
    if (n.empty() || n.find_first_of(" \t\r\n") != std::string::npos) {
      std::cerr << who << ": '" << n << "' is not a member or host name\n";
      return kExitUsage;
    }
    line += " " + n;
  }
  return ask_agent(
      who, control, name, line,
      [&who, excluding](const control::ExcludeReply& doc, const std::string&) {
        if (!doc.committed) {
          std::cerr << who << ": " << (doc.pending ? "pending: " : "refused: ") << doc.error.value_or("?") << "\n";
          return kExitFailure;
        }
        std::cout << (excluding ? "excluded: " : "readmitted: ") << joined(doc.members) << " (committed epoch "
                  << doc.epoch << "; excluded now: " << (doc.excluded.empty() ? "none" : joined(doc.excluded)) << ")\n";
        return kExitOk;
      },
      std::chrono::seconds(30));
}

}  // namespace

int view_command(std::span<const std::string> args) {
  std::optional<std::string> control, name;
  bool json = false, yes = false, ready = false;
  auto app = command_app("shoal view",
                         "shoal view [--control PATH | --name NAME] [--json | --ready]\n"
                         "shoal view force [--control PATH | --name NAME] --yes\n"
                         "shoal view exclude NAME... [--control PATH | --name NAME]\n"
                         "shoal view readmit NAME... [--control PATH | --name NAME]",
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
  std::vector<std::string> names;
  CLI::App* exclude = add_command(
      *app, "exclude", "shoal view exclude NAME... [--control PATH | --name NAME]",
      "Keep members out of every view until readmitted.\n"
      "For a host that keeps failing, or one to repair. NAME is a member's name, or a host's name for\n"
      "every member on it. The asked agent (a member of the view)\n"
      "proposes the next view without them, agreed by a majority like any view change; every later view\n"
      "carries the list, so no member proposes them back. Refused when the rest would not be a majority of\n"
      "the view, or fewer than --min-hosts. The excluded agents stay alive out of views.\n"
      "Exit status: 0 once a committed view excludes them, 1 when refused or not committed within 20 s (the\n"
      "agent goes on proposing it; the reason is printed).");
  add_agent_socket_flags(*exclude, control, name);
  exclude->add_option("NAME", names, "members or hosts to exclude")->required();
  CLI::App* readmit =
      add_command(*app, "readmit", "shoal view readmit NAME... [--control PATH | --name NAME]",
                  "Let excluded members back into views.\n"
                  "The next view no longer excludes them, and those alive join it at once (their failure count and\n"
                  "hold-down are forgotten). Agreed like any view change.\n"
                  "Exit status: 0 once a committed view no longer excludes them, 1 when refused or not committed.");
  add_agent_socket_flags(*readmit, control, name);
  readmit->add_option("NAME", names, "excluded members or hosts to readmit")->required();
  for (CLI::App* sub : {exclude, readmit}) {
    sub->excludes(json_flag);
    sub->excludes(ready_flag);
  }
  if (auto done = parse_command(*app, args)) return *done;
  if (force->parsed()) return force_command(control, name, yes);
  if (exclude->parsed()) return exclude_command(control, name, names, true);
  if (readmit->parsed()) return exclude_command(control, name, names, false);
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

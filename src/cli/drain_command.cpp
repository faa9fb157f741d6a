// `shoal drain [--within SECONDS] [--wait]`: asks a running agent to drain: its trainers finish the step, save,
// wait until a peer holds that version, and the member leaves the cluster gracefully at that step boundary.
// With --wait the command returns once the agent is gone (a Kubernetes preStop hook, a maintenance script).
#include <iostream>
#include <thread>

#include "cli/cli.hpp"
#include "cli/command_line.hpp"
#include "cli/control_ask.hpp"
#include "cli/flag_values.hpp"
#include "control/client.hpp"

namespace shoal::cli {
namespace {

// How often --wait asks whether the agent is still there, and how long after the drain's deadline it still waits
// (the leave itself: lingering while the others commit, the disk).
constexpr std::chrono::milliseconds kWaitPoll{100};
constexpr std::chrono::seconds kWaitAfterDeadline{70};

int wait_gone(const std::string& path, std::chrono::milliseconds within) {
  const auto deadline = std::chrono::steady_clock::now() + within + kWaitAfterDeadline;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!control::control_request(path, "view", std::chrono::milliseconds(1000))) {
      std::cout << "drained: the agent has left\n";
      return kExitOk;
    }
    std::this_thread::sleep_for(kWaitPoll);
  }
  std::cerr << "shoal drain: the agent at " << path << " still answers after the drain's deadline\n";
  return kExitFailure;
}

}  // namespace

int drain_command(std::span<const std::string> args) {
  std::optional<std::string> control, name;
  std::optional<double> within_s;
  bool wait = false;
  auto app = command_app(
      "shoal drain", "shoal drain [--control PATH | --name NAME] [--within SECONDS] [--wait]",
      "Drain a running agent's host: its trainers finish the current step, save a flash checkpoint, wait\n"
      "until a peer host holds that version, and the member leaves the cluster gracefully at that step\n"
      "boundary; the others go on from the same step, discarding and redoing nothing. After --within\n"
      "seconds (default: the agent's --drain-within, 60) it leaves anyway. Refused for the last member of\n"
      "the view and for a member in no committed view. Needs the agent's own user (or root).\n"
      "Exit status: 0 when the drain began (with --wait: once the agent has left), 1 when it was refused\n"
      "(the reason is printed) or no agent answers, 2 on a usage error.");
  add_agent_socket_flags(*app, control, name);
  app->add_option("--within", within_s, "leave at the latest this long from now")
      ->type_name("SECONDS")
      ->transform(seconds(ZeroSeconds::refused, 3600));
  app->add_flag("--wait", wait, "return only once the agent has left");
  if (auto done = parse_command(*app, args)) return *done;
  std::string request = "drain";
  if (within_s) request += " " + std::to_string(static_cast<int64_t>(*within_s * 1000.0 + 0.5));
  std::string path;
  std::chrono::milliseconds within{0};
  const int asked = ask_agent("shoal drain", control, name, request,
                              [&](const control::DrainReply& doc, const std::string&) {
                                if (!doc.draining) {
                                  std::cerr << "shoal drain: refused: " << doc.error.value_or("?") << "\n";
                                  return kExitFailure;
                                }
                                within = std::chrono::milliseconds(static_cast<int64_t>(doc.within_s * 1000.0));
                                std::cout << "draining (epoch " << doc.epoch << "): leaving within " << doc.within_s
                                          << " s\n";
                                return kExitOk;
                              });
  if (asked != kExitOk || !wait) return asked;
  auto socket = agent_socket(control, name);
  if (!socket) return kExitFailure;
  return wait_gone(*socket, within);
}

}  // namespace shoal::cli

// One request to a running agent for a CLI command: the --control/--name flags that every such command takes
// and the control socket they name, the request, the reply read into its typed struct, and every failure as
// a message and an exit status.
#pragma once

#include <chrono>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <type_traits>

#include "base/result.hpp"
#include "cli/cli.hpp"
#include "control/replies.hpp"

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

// An agent's answer that is a JSON document and not an error document.
struct AgentAnswer {
  std::string path;  // the control socket asked
  std::string raw;   // the reply as sent (what --json prints)
  control::Json doc;
};

// The answer to `request`; otherwise prints why to stderr as "WHO: ..." (an error document: its message)
// and sets `exit_code` to kExitFailure.
// `timeout` bounds the whole exchange.
std::optional<AgentAnswer> ask_agent_document(const std::string& who, const std::optional<std::string>& control,
                                              const std::optional<std::string>& name, const std::string& request,
                                              int& exit_code,
                                              std::chrono::milliseconds timeout = std::chrono::seconds(5));

// The reply type a printer takes: Reply for a callable `int(const Reply&, const std::string&)`.
template <class Signature>
struct PrintedReply;
template <class Reply>
struct PrintedReply<std::function<int(const Reply&, const std::string&)>> {
  using type = Reply;
};

// Calls `print(reply, raw reply)` with the answer read as the reply type `print` takes (a
// control::StatusReply, say) and returns what it returns; otherwise prints why as ask_agent_document does
// and returns kExitFailure.
template <class Print>
int ask_agent(const std::string& who, const std::optional<std::string>& control, const std::optional<std::string>& name,
              const std::string& request, const Print& print,
              std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  using Reply = typename PrintedReply<decltype(std::function(print))>::type;
  int exit_code = kExitFailure;
  auto answer = ask_agent_document(who, control, name, request, exit_code, timeout);
  if (!answer) return exit_code;
  auto reply = control::read_reply<Reply>(answer->doc);
  if (!reply) {
    std::cerr << who << ": the agent at " << answer->path << " sent an unexpected reply: " << reply.error().message
              << "\n";
    return kExitFailure;
  }
  return print(*reply, answer->raw);
}

}  // namespace shoal::cli

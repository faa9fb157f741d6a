// Test fixture for multi-process agent tests: starts `shoal agent` processes on loopback with
// OS-chosen ports and control sockets in a fresh temporary directory, asks them for their member
// lists, and kills and reaps every process it started when it goes out of scope.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "control/replies.hpp"
#include "process.hpp"

namespace shoal::test {

struct AgentProcess {
  std::string name;
  std::string addr;     // "127.0.0.1:PORT", from the agent's first line on stdout
  std::string control;  // its control socket
  std::string log;      // its stderr
  std::unique_ptr<ChildProcess> process;
};

// One member's view, from its `members` control request.
struct MemberView {
  std::string state;
  uint64_t generation = 0;
  uint64_t incarnation = 0;
  std::string addr;
};

class AgentCluster {
 public:
  AgentCluster();
  ~AgentCluster();

  // Starts `name` (joining through `seeds`, none: a new cluster) and waits for its listening line.
  // Fails the test if it does not print one within 10 s.
  AgentProcess& start(const std::string& name, const std::vector<std::string>& seeds = {},
                      const std::vector<std::string>& extra_args = {}, const std::string& bind = "127.0.0.1:0");
  AgentProcess& operator[](const std::string& name) { return agents_.at(name); }

  // The member list as `name` sees it (empty on any failure).
  std::map<std::string, MemberView> view_of(const std::string& name) const;
  // The reply of `name` to one control request line, as sent (nullopt when it did not answer).
  std::optional<std::string> request_text(const std::string& name, const std::string& line) const;
  // That reply read as `Reply` (nullopt on any failure, an error document included).
  template <class Reply>
  std::optional<Reply> request(const std::string& name, const std::string& line) const {
    const auto text = request_text(name, line);
    if (!text) return std::nullopt;
    auto reply = control::parse_reply<Reply>(*text);
    if (!reply) return std::nullopt;
    return std::move(*reply);
  }
  // The message of the error document `name` answers `line` with (nullopt for any other answer).
  std::optional<std::string> request_error(const std::string& name, const std::string& line) const;
  // The `members` reply of `name`.
  std::optional<control::MembersReply> members_doc(const std::string& name) const;

  // Polls `condition` every 100 ms until it holds or `timeout` passes.
  static bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout);
  // True when every agent in `observers` sees `subject` in `state`.
  bool all_see(const std::vector<std::string>& observers, const std::string& subject, const std::string& state) const;

  const std::string& dir() const { return dir_.path(); }
  // The last lines of an agent's log, for failure messages.
  std::string log_tail(const std::string& name, size_t lines = 30) const;

 private:
  TempDir dir_;
  std::map<std::string, AgentProcess> agents_;
  int restarts_ = 0;
};

}  // namespace shoal::test

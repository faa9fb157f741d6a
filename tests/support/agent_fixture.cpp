// AgentCluster: starting, querying and cleaning up shoal agent processes for integration tests.
#include "agent_fixture.hpp"

#include <algorithm>

#include <doctest/doctest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "control/client.hpp"

namespace shoal::test {

AgentCluster::AgentCluster() = default;

AgentCluster::~AgentCluster() {
  for (auto& [name, a] : agents_) {
    if (a.process) a.process->kill_and_reap();
    ::unlink(a.control.c_str());
  }
}

AgentProcess& AgentCluster::start(const std::string& name, const std::vector<std::string>& seeds,
                                  const std::vector<std::string>& extra_args, const std::string& bind) {
  AgentProcess a;
  a.name = name;
  a.control = dir() + "/" + name + ".sock";
  a.log = dir() + "/" + name + "." + std::to_string(restarts_++) + ".log";
  std::vector<std::string> argv = {SHOAL_BINARY, "--log-level", "info",      "agent",   "--name",    name,
                                   "--bind",     bind,          "--control", a.control, "--cluster", "test"};
  if (!seeds.empty()) {
    std::string list;
    for (const auto& s : seeds) list += (list.empty() ? "" : ",") + s;
    argv.push_back("--seeds");
    argv.push_back(list);
  }
  // An open cluster unless the test gives a key: tests run on loopback only, and say so (before the
  // extra flags: they may end with `-- COMMAND`).
  if (std::find(extra_args.begin(), extra_args.end(), "--key-file") == extra_args.end()) argv.push_back("--insecure");
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  a.process = std::make_unique<ChildProcess>(argv, a.log);
  const auto line = a.process->read_line(std::chrono::seconds(10));
  INFO("agent " << name << " log:\n"
                << [&] {
                     std::ifstream f(a.log);
                     std::stringstream ss;
                     ss << f.rdbuf();
                     return ss.str();
                   }());
  REQUIRE(line.has_value());
  const std::string marker = " listening on ";
  const auto at = line->find(marker);
  REQUIRE(at != std::string::npos);
  const auto end = line->find(' ', at + marker.size());
  a.addr = line->substr(at + marker.size(), end - at - marker.size());
  auto& slot = agents_[name];
  if (slot.process) slot.process->kill_and_reap();
  slot = std::move(a);
  return slot;
}

std::optional<control::MembersReply> AgentCluster::members_doc(const std::string& name) const {
  return request<control::MembersReply>(name, "members");
}

std::optional<std::string> AgentCluster::request_text(const std::string& name, const std::string& line) const {
  const auto it = agents_.find(name);
  if (it == agents_.end()) return std::nullopt;
  auto reply = control::control_request(it->second.control, line, std::chrono::seconds(3));
  if (!reply) return std::nullopt;
  return std::move(*reply);
}

std::optional<std::string> AgentCluster::request_error(const std::string& name, const std::string& line) const {
  const auto error = request<control::ErrorReply>(name, line);
  return error ? std::optional<std::string>(error->error) : std::nullopt;
}

std::map<std::string, MemberView> AgentCluster::view_of(const std::string& name) const {
  std::map<std::string, MemberView> out;
  const auto doc = members_doc(name);
  if (!doc) return out;
  for (const auto& m : doc->members) out[m.name] = MemberView{m.state, m.generation, m.incarnation, m.addr};
  return out;
}

bool AgentCluster::eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

bool AgentCluster::all_see(const std::vector<std::string>& observers, const std::string& subject,
                           const std::string& state) const {
  for (const auto& o : observers) {
    const auto view = view_of(o);
    const auto it = view.find(subject);
    if (it == view.end() || it->second.state != state) return false;
  }
  return true;
}

std::string AgentCluster::log_tail(const std::string& name, size_t lines) const {
  const auto it = agents_.find(name);
  if (it == agents_.end()) return "(no such agent)";
  std::ifstream f(it->second.log);
  std::vector<std::string> all;
  for (std::string line; std::getline(f, line);) all.push_back(line);
  std::string out;
  for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) out += all[i] + "\n";
  return out;
}

}  // namespace shoal::test

// Test helper: a session fed views and failure verdicts by the test (as its agent would), building real
// Gloo communicators through the rendezvous store of a real agent, and the views the tests feed it.
#pragma once

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include "running_agent.hpp"
#include "session/session_core.hpp"

namespace shoal::test {

inline constexpr uint64_t kGeneration = 7;

// A session fed by the test instead of an agent.
class FedSession : public shoal::session::SessionCore {
 public:
  FedSession(const RunningAgent& store_host, const std::string& name) : SessionCore(options()) {
    shoal::session::SessionIdentity id;
    id.name = name;
    id.generation = kGeneration;
    id.bind_ip = "127.0.0.1";
    id.rendezvous_hello = store_host.agent->hello(shoal::wire::Hello::RENDEZVOUS);
    set_identity(std::move(id));
  }
  void feed(const shoal::membership::View& v) { view_committed(v); }
  void fail(const std::string& member) { member_failed(member, kGeneration, "dead"); }
  void back(const std::string& member) { member_back(member, kGeneration); }
  void taken_back(uint64_t epoch) { failures_taken_back(epoch); }  // a connected session's feed says so
  void leave() override {}
  std::string address() const override { return {}; }

 private:
  static shoal::SessionOptions options() {
    shoal::SessionOptions o;
    o.view_timeout = std::chrono::seconds(30);
    o.rendezvous_timeout = std::chrono::seconds(10);
    o.collective_timeout = std::chrono::seconds(10);
    return o;
  }
};

// n0 (whose agent, the test's, serves the store as rank 0's), n1, n2 ... of one slot each.
inline shoal::membership::View make_view(uint64_t epoch, const RunningAgent& store_host, int members) {
  std::vector<shoal::membership::ViewMember> ms;
  for (int i = 0; i < members; ++i) {
    const std::string addr = i == 0 ? store_host.agent->addr() : "127.0.0.1:" + std::to_string(i);
    ms.push_back({"n" + std::to_string(i), "h" + std::to_string(i), addr, 1, 1, kGeneration});
  }
  auto v = shoal::membership::View::make(epoch, ms);
  REQUIRE(v.ok());
  return v.value();
}

}  // namespace shoal::test

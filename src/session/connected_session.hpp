// ConnectedSession: shoal::Session for a trainer that drives one GPU slot of a host whose agent runs
// as its own process (`shoal agent`). It follows the agent over its control socket (session-info once,
// then the session-wait long poll on a thread of its own) and talks to the rendezvous store over TCP
// like any rank. Leaving only disconnects: the agent, and the host's membership, stay.
#pragma once

#include <atomic>
#include <thread>

#include "session/session_core.hpp"

namespace shoal::session {

class ConnectedSession final : public SessionCore {
 public:
  explicit ConnectedSession(SessionOptions options);
  ~ConnectedSession() override;

  // Asks the agent who it is and starts following it; a failure says what to change.
  Status begin();

  void leave() override;
  std::string address() const override { return agent_addr_; }

 protected:
  // Tells the agent over the control socket (`peer-lost`), so that it probes the member at once.
  void peer_connection_broke(const std::string& name, uint64_t generation) override;

 private:
  void follow();

  std::string agent_addr_;
  std::atomic<bool> stop_{false};
  std::thread poller_;
};

}  // namespace shoal::session

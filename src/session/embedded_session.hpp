// EmbeddedSession: shoal::Session with the agent on a thread of the trainer's own process, feeding the
// session core its committed views and member failures directly.
#pragma once

#include <atomic>
#include <boost/asio/signal_set.hpp>
#include <memory>
#include <thread>

#include "daemon/agent.hpp"
#include "session/session_core.hpp"

namespace shoal::session {

class EmbeddedSession final : public SessionCore {
 public:
  EmbeddedSession(daemon::AgentConfig cfg, SessionOptions options);
  ~EmbeddedSession() override;

  // Starts the agent and its thread; a failure says what to change.
  Status begin();

  void leave() override;
  std::string address() const override;
  // The verdict goes to the embedded agent (shoal health, status, metrics, its log).
  void report_health(const JobHealth& health) override;
  // The figures go to the embedded agent as local rank 0's (shoal status, metrics).
  void report_trainer_stats(const health::TrainerStats& stats) override;
  void report_drained(uint64_t step) override;

 protected:
  void peer_connection_broke(const std::string& name, uint64_t generation) override;

 private:
  // SessionOptions::leave_on_sigterm: a graceful leave, then the process ends as SIGTERM asks.
  void leave_on_sigterm();

  std::unique_ptr<daemon::Agent> agent_;
  std::unique_ptr<boost::asio::signal_set> sigterm_;
  std::atomic<int> stop_signal_{0};
  std::thread loop_;
};

}  // namespace shoal::session

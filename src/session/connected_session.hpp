// ConnectedSession: shoal::Session for a trainer that drives one GPU slot of a host whose agent runs
// as its own process (`shoal agent`). It follows the agent over its control socket (session-info once,
// then the session-wait long poll on a thread of its own) and talks to the rendezvous store over TCP
// like any rank. Leaving only disconnects: the agent, and the host's membership, stay.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "base/warn_limiter.hpp"
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
  // Hands the verdict to the reporter thread, which sends it to the agent (`health-report`, in parts);
  // a newer verdict replaces one not sent yet. Never blocks the loop.
  void report_health(const JobHealth& health) override;
  void report_drained(uint64_t step) override;
  // Hands the figures to the reporter thread, which sends them (`trainer-stats SLOT ...`) with a short
  // deadline; a newer report replaces one not sent yet, and the last one is still sent when the session leaves.
  void report_trainer_stats(const health::TrainerStats& stats) override;

 protected:
  // Tells the agent over the control socket (`peer-lost`), so that it probes the member at once.
  void peer_connection_broke(const std::string& name, uint64_t generation) override;

 private:
  void follow();
  void send_reports();  // the reporter thread
  void send_health(const JobHealth& health, log::WarnLimiter& warn_limiter);
  void send_trainer_stats(const health::TrainerStats& stats);

  std::string agent_addr_;
  std::atomic<bool> stop_{false};
  std::thread poller_;
  std::mutex report_mu_;
  std::condition_variable report_cv_;
  std::optional<JobHealth> report_;  // the newest verdict not sent yet
  std::optional<health::TrainerStats> stats_;  // the newest run figures not sent yet
  bool stats_failed_ = false;  // the reporter thread's: a report could not be sent (warned once, then at debug)
  bool report_stop_ = false;
  std::thread reporter_;
};

}  // namespace shoal::session

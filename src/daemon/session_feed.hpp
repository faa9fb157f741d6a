// SessionFeed: what a trainer connected over the control socket needs to follow the job, served by
// the agent: `session-info` (who this agent is, for ranks and the rendezvous hello) and the long poll
// `session-wait SEQ TIMEOUT_MS`, answered as soon as something newer than SEQ happened (a committed
// view, a member of the current view found dead or left, a drain of this member) or when TIMEOUT_MS passes.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "control/handlers.hpp"
#include "gossip/types.hpp"
#include "membership/view.hpp"

namespace boost::asio {
class io_context;
}

namespace shoal::daemon {

struct SessionInfo {
  std::string name;
  uint64_t generation = 0;
  std::string addr;
  std::string cluster;
  uint32_t slots = 0;
  std::string job;       // checkpoints: the job name
  std::string store;     // checkpoints: this host's segment names
  std::string key_file;  // the cluster key file (empty: an open cluster); connected trainers seal with it
  bool store_by_lineage = false;  // the segments are store_for_lineage(store, the view's lineage)
  int64_t ckpt_replicas = -1;     // peer hosts that keep a copy of each version (-1: serves no checkpoints)
};

class SessionFeed {
 public:
  static constexpr uint32_t kMaxWaitMs = 60'000;

  // Registers its requests on `handlers`; `info` is asked at each session-info (valid after start).
  SessionFeed(boost::asio::io_context& io, control::ControlHandlers& handlers, std::function<SessionInfo()> info);
  ~SessionFeed();
  SessionFeed(const SessionFeed&) = delete;
  SessionFeed& operator=(const SessionFeed&) = delete;

  void on_view(const membership::View& view);
  void on_member(const gossip::MemberEvent& event);
  // This member drains (Agent::drain): every answer from now on says so.
  void on_drain();

 private:
  struct Waiter;
  std::string state_json() const;
  void notify();

  boost::asio::io_context& io_;
  std::function<SessionInfo()> info_;
  uint64_t seq_ = 0;
  std::optional<membership::View> view_;
  uint64_t broken_epoch_ = 0;
  std::string broken_why_;
  uint64_t failures_ = 0;  // failure verdicts about members of the view at the time, ever
  // The members reported failed in broken_epoch_ that have not answered again since, and the newest
  // broken epoch whose every failure was taken back (they refuted: no view will remove them).
  std::set<std::pair<std::string, uint64_t>> unconfirmed_;
  uint64_t cleared_epoch_ = 0;
  bool drain_ = false;
  std::map<uint64_t, std::shared_ptr<Waiter>> waiters_;
  uint64_t next_waiter_ = 1;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace shoal::daemon

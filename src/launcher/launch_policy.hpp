// LaunchPolicy: when `shoal agent -- COMMAND` starts, stops and restarts its workers, and when the host
// gives up and leaves. Pure: committed views, worker exits and the time come in; what to do goes out.
//
// Two modes:
//  - restart (torchrun's behaviour): the workers run for one committed view. A newer view that changes
//    this host's ranks stops them (SIGTERM) and starts them again with the new ranks. A worker that
//    fails while the view holds is the workers' own failure: the others of this host are stopped, and
//    after a grace (so that a failure caused by a lost peer is recognised by the view change that
//    follows it, and not counted) they all start again, at most max_restarts times.
//  - connect: workers link libshoal and rebuild in place, so view changes leave them running; a
//    failed worker alone is started again, counted against max_restarts.
// In both modes, once every worker has exited 0 the job is done here: no more starts, and after a short
// exit barrier (the other hosts' workers finishing their last steps must not see this host vanish
// first) the host leaves with status 0. Past max_restarts it leaves with status 1.
// A drain (on_drain: `shoal drain`, a spot notice, SIGTERM with --drain-on-sigterm) lets the workers end on
// their own after their last save: views no longer stop or start them, none is started again, and once none
// is left the host leaves at once (no exit barrier: the others already go on without it), with status 0 when
// every one exited 0. At the drain's deadline the rest are stopped.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gossip/types.hpp"

namespace shoal::launcher {

enum class WorkerMode { restart, connect };

struct LaunchLimits {
  WorkerMode mode = WorkerMode::restart;
  uint32_t max_restarts = 3;  // starts after a worker's own failure
  gossip::Time failure_grace = std::chrono::seconds(5);
  gossip::Time exit_barrier = std::chrono::seconds(3);
};

// What the shell does after one input, in this order: stop, start, arm the timer, leave.
struct LaunchStep {
  bool stop_all = false;                // SIGTERM every live worker (SIGKILL after the shell's timeout)
  std::vector<uint32_t> start_slots;    // start a worker for each slot...
  uint64_t start_epoch = 0;             // ...with the ranks of this committed view
  std::optional<gossip::Time> wake_at;  // call on_tick then
  std::optional<int> leave_with;        // leave the cluster and exit with this status
  std::string why;                      // one line for the agent's log; empty when nothing happened
};

class LaunchPolicy {
 public:
  explicit LaunchPolicy(LaunchLimits limits);

  // A committed view: `slots` is how many ranks it gives this host (0: not in it, or a witness).
  LaunchStep on_view(uint64_t epoch, uint32_t slots, gossip::Time now);
  // A worker process ended: status 0 is success; anything else (or a signal) is a failure unless the
  // policy had asked for the stop.
  LaunchStep on_exit(uint32_t slot, bool success, gossip::Time now);
  LaunchStep on_tick(gossip::Time now);
  // SIGTERM/SIGINT to the agent: stop the workers, then leave with status 0.
  LaunchStep on_shutdown();
  // The host drains (see above); `deadline`: when the workers still running are stopped.
  LaunchStep on_drain(gossip::Time deadline, gossip::Time now);
  bool draining() const { return draining_; }

  uint32_t restarts() const { return restarts_; }
  // The TORCHELASTIC_RESTART_COUNT workers started for `epoch` receive. In restart mode it is derived
  // from the view alone (epoch - 1), so every host passes the same number for one view, unlike
  // torchrun's per-agent count; in connect mode, where views do not restart workers, it counts this
  // host's restarts.
  uint32_t restart_count(uint64_t epoch) const;
  // Restart mode: how often this host's workers were started again for the view they run now with no
  // view change (0 for its first start). A failure that no view change explains ends every rank's
  // collectives, so every host restarts its workers as often: the round tells the new workers'
  // rendezvous keys from those of the workers they replace (SHOAL_WORKER_ROUND).
  uint32_t round() const { return round_; }
  size_t live() const;
  bool leaving() const { return phase_ == Phase::leaving; }

 private:
  enum class SlotState { idle, running, stopping, succeeded, failed };
  enum class Phase {
    waiting,    // no workers wanted (no view with ranks yet), or they are being stopped for a new view
    running,    // workers of running_epoch_ are live
    failed,     // a worker failed: the others are stopped, a restart waits for failure_deadline_
    finishing,  // a worker succeeded: the rest are allowed to end on their own
    done,       // all succeeded: leave after the exit barrier
    leaving,
  };

  LaunchStep start_all(gossip::Time now, std::string why);
  LaunchStep stop_all(std::string why);
  LaunchStep settle(gossip::Time now);
  LaunchStep give_up_or_restart(gossip::Time now);
  bool any(SlotState s) const;

  LaunchLimits limits_;
  Phase phase_ = Phase::waiting;
  std::vector<SlotState> slots_;
  uint64_t target_epoch_ = 0;  // newest committed view giving this host ranks (0: none)
  uint32_t target_slots_ = 0;
  uint64_t running_epoch_ = 0;  // the view the live workers were started for
  uint32_t restarts_ = 0;
  uint32_t round_ = 0;  // see round()
  gossip::Time failure_deadline_{0};
  gossip::Time done_at_{0};
  bool shutting_down_ = false;
  bool draining_ = false;
  gossip::Time drain_deadline_{0};
};

}  // namespace shoal::launcher

// LaunchPolicy: the phases of a host's workers (see the header for the two modes).
#include "launcher/launch_policy.hpp"

#include <algorithm>

namespace shoal::launcher {

LaunchPolicy::LaunchPolicy(LaunchLimits limits) : limits_(limits) {}

bool LaunchPolicy::any(SlotState s) const { return std::find(slots_.begin(), slots_.end(), s) != slots_.end(); }

size_t LaunchPolicy::live() const {
  return static_cast<size_t>(std::count_if(
      slots_.begin(), slots_.end(), [](SlotState s) { return s == SlotState::running || s == SlotState::stopping; }));
}

uint32_t LaunchPolicy::restart_count(uint64_t epoch) const {
  if (limits_.mode == WorkerMode::connect) return restarts_;
  return epoch > 0 ? static_cast<uint32_t>(epoch - 1) : 0;
}

LaunchStep LaunchPolicy::start_all(gossip::Time /*now*/, std::string why) {
  LaunchStep step;
  if (running_epoch_ != target_epoch_) round_ = 0;  // the first start for this view
  slots_.assign(target_slots_, SlotState::running);
  running_epoch_ = target_epoch_;
  phase_ = Phase::running;
  for (uint32_t s = 0; s < target_slots_; ++s) step.start_slots.push_back(s);
  step.start_epoch = target_epoch_;
  step.why = std::move(why);
  return step;
}

LaunchStep LaunchPolicy::stop_all(std::string why) {
  LaunchStep step;
  for (auto& s : slots_) {
    if (s == SlotState::running) {
      s = SlotState::stopping;
      step.stop_all = true;
    }
  }
  if (step.stop_all) step.why = std::move(why);
  return step;
}

LaunchStep LaunchPolicy::on_view(uint64_t epoch, uint32_t slots, gossip::Time now) {
  if (phase_ == Phase::leaving || phase_ == Phase::done || phase_ == Phase::finishing || shutting_down_ ||
      draining_) {
    return {};
  }
  target_epoch_ = slots > 0 ? epoch : 0;
  target_slots_ = slots;
  if (limits_.mode == WorkerMode::connect) {
    // Connected workers follow views themselves: start them once, at the first view with ranks here.
    if (phase_ == Phase::waiting && live() == 0 && slots_.empty() && target_epoch_ != 0) {
      return start_all(now, "view " + std::to_string(epoch) + " gives this host " + std::to_string(slots) +
                                " ranks: starting the workers, which rebuild in place from now on");
    }
    return {};
  }
  if (phase_ == Phase::running && running_epoch_ != target_epoch_) {
    phase_ = Phase::waiting;
    return stop_all(target_epoch_ == 0
                        ? "view " + std::to_string(epoch) + " holds no ranks of this host: stopping the workers"
                        : "view " + std::to_string(epoch) + " changes the ranks: stopping the workers of view " +
                              std::to_string(running_epoch_) + " to start them again");
  }
  return settle(now);
}

LaunchStep LaunchPolicy::on_exit(uint32_t slot, bool success, gossip::Time now) {
  if (slot >= slots_.size()) return {};
  SlotState& s = slots_[slot];
  if (s == SlotState::stopping) {
    s = SlotState::idle;  // asked for; neither a success nor a failure
    return settle(now);
  }
  if (s != SlotState::running) return {};
  s = success ? SlotState::succeeded : SlotState::failed;
  if (draining_) return settle(now);  // a drained worker's exit is final
  const std::string who = "worker of slot " + std::to_string(slot);

  if (limits_.mode == WorkerMode::connect) {
    if (success) {
      if (!any(SlotState::running) && !any(SlotState::failed)) {
        phase_ = Phase::finishing;
        return settle(now);
      }
      return {};
    }
    if (restarts_ >= limits_.max_restarts) {
      phase_ = Phase::failed;
      LaunchStep step = stop_all("");
      phase_ = Phase::leaving;
      step.leave_with = 1;
      step.why = who + " failed after " + std::to_string(restarts_) + " restarts (--max-restarts " +
                 std::to_string(limits_.max_restarts) + "): leaving the cluster";
      return step;
    }
    ++restarts_;
    s = SlotState::running;
    LaunchStep step;
    step.start_slots = {slot};
    step.start_epoch = target_epoch_;
    step.why = who + " failed: starting it again (restart " + std::to_string(restarts_) + " of " +
               std::to_string(limits_.max_restarts) + ")";
    return step;
  }

  if (success) {
    if (phase_ == Phase::running) phase_ = Phase::finishing;
    LaunchStep step = settle(now);
    if (step.why.empty()) step.why = who + " exited 0: the workers are finishing; views no longer restart them";
    return step;
  }
  // The workers' own failure, or the first sign of a lost peer: stop the rest and wait for a view.
  phase_ = Phase::failed;
  failure_deadline_ = now + limits_.failure_grace;
  LaunchStep step = stop_all("");
  LaunchStep after = settle(now);
  step.wake_at = after.wake_at;
  step.why = who + " failed: stopping the others; restarting unless a view change explains it";
  return step;
}

LaunchStep LaunchPolicy::on_tick(gossip::Time now) { return settle(now); }

LaunchStep LaunchPolicy::on_shutdown() {
  if (phase_ == Phase::leaving) return {};
  shutting_down_ = true;
  LaunchStep step = stop_all("stopping the workers before leaving");
  if (live() == 0) {
    phase_ = Phase::leaving;
    step.leave_with = 0;
  }
  return step;
}

LaunchStep LaunchPolicy::on_drain(gossip::Time deadline, gossip::Time now) {
  if (phase_ == Phase::leaving || shutting_down_ || draining_) return {};
  draining_ = true;
  drain_deadline_ = deadline;
  LaunchStep step = settle(now);
  if (step.why.empty()) step.why = "draining: the workers end after their last save; none is started again";
  return step;
}

LaunchStep LaunchPolicy::give_up_or_restart(gossip::Time now) {
  if (restarts_ >= limits_.max_restarts) {
    phase_ = Phase::leaving;
    LaunchStep step;
    step.leave_with = 1;
    step.why = "the workers failed after " + std::to_string(restarts_) + " restarts (--max-restarts " +
               std::to_string(limits_.max_restarts) + "): leaving the cluster";
    return step;
  }
  ++restarts_;
  ++round_;
  return start_all(now, "no view change explains the failure: starting the workers of view " +
                            std::to_string(target_epoch_) + " again (restart " + std::to_string(restarts_) + " of " +
                            std::to_string(limits_.max_restarts) + ")");
}

// Decides what follows once no worker is being waited for.
LaunchStep LaunchPolicy::settle(gossip::Time now) {
  if (phase_ == Phase::leaving) return {};
  if (draining_ && !shutting_down_) {
    if (live() == 0) {
      phase_ = Phase::leaving;
      LaunchStep step;
      step.leave_with = any(SlotState::failed) ? 1 : 0;
      step.why = "drained: no worker is left; leaving the cluster";
      return step;
    }
    if (now < drain_deadline_) {
      LaunchStep step;
      step.wake_at = drain_deadline_;
      return step;
    }
    shutting_down_ = true;
    return stop_all("the drain's deadline passed: stopping the workers still running");
  }
  if (shutting_down_) {
    if (live() > 0) return {};
    phase_ = Phase::leaving;
    LaunchStep step;
    step.leave_with = 0;
    return step;
  }
  switch (phase_) {
    case Phase::waiting:
      if (live() > 0 || target_epoch_ == 0) return {};
      return start_all(now, "view " + std::to_string(target_epoch_) + " gives this host " +
                                std::to_string(target_slots_) + " ranks: starting the workers");
    case Phase::running:
      return {};
    case Phase::failed: {
      if (live() > 0) return {};
      if (target_epoch_ != running_epoch_) {
        phase_ = Phase::waiting;
        if (target_epoch_ == 0) return {};
        return start_all(now, "view " + std::to_string(target_epoch_) +
                                  " followed the failure (not counted as a restart): starting the workers");
      }
      if (now >= failure_deadline_) return give_up_or_restart(now);
      LaunchStep step;
      step.wake_at = failure_deadline_;
      return step;
    }
    case Phase::finishing: {
      if (any(SlotState::running) || any(SlotState::stopping)) return {};
      if (any(SlotState::failed)) {
        phase_ = Phase::failed;
        failure_deadline_ = now + limits_.failure_grace;
        return settle(now);
      }
      phase_ = Phase::done;
      done_at_ = now + limits_.exit_barrier;
      LaunchStep step;
      step.wake_at = done_at_;
      step.why = "every worker exited 0: leaving after the exit barrier";
      return step;
    }
    case Phase::done: {
      if (now < done_at_) {
        LaunchStep step;
        step.wake_at = done_at_;
        return step;
      }
      phase_ = Phase::leaving;
      LaunchStep step;
      step.leave_with = 0;
      step.why = "the job is done on this host: leaving the cluster";
      return step;
    }
    case Phase::leaving:
      return {};
  }
  return {};
}

}  // namespace shoal::launcher

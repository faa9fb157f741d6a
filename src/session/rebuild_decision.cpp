// The session's rebuild decision as a pure function (see rebuild_decision.hpp).
#include "session/rebuild_decision.hpp"

#include <algorithm>

namespace shoal::session {

RebuildDecision decide_rebuild(RebuildState s, RebuildClock::time_point now, RebuildClock::time_point deadline) {
  RebuildDecision d;
  if (s.comm && !s.comm->aborted && s.latest_epoch == s.comm->epoch) {
    d.action = RebuildAction::use_current;
    d.failed = s.failed;
    return d;
  }
  // The held communicator failed while every member of its view lives: that attempt failed.
  if (s.comm && s.comm->aborted && !s.failed && s.failure_is_local(s.comm->epoch, now)) {
    s.failed = FailedAttempt{s.comm->epoch, s.comm->attempt};
  }
  if (s.failed && s.failure_is_local(s.failed->epoch, now)) {
    d.action = RebuildAction::retry_same_view;
    d.retry_after = s.failed->attempt;
    d.failed = s.failed;
    return d;
  }
  // A failed attempt of a view that is no longer the newest is history.
  if (s.failed && s.latest_epoch != s.failed->epoch) s.failed.reset();
  d.failed = s.failed;
  if (s.stopped) {
    d.action = RebuildAction::stop;
    return d;
  }
  if (s.latest_usable(now)) {
    if (s.comm && s.comm->aborted && s.latest_epoch == s.comm->epoch) {
      // The failure's grace passed with no newer view: the failed communicator's own view again, which is
      // rebuilt as a retry (failure_is_local holds now that the view is usable).
      d.failed = FailedAttempt{s.comm->epoch, s.comm->attempt};
      d.action = RebuildAction::retry_same_view;
      d.retry_after = s.comm->attempt;
      return d;
    }
    d.action = RebuildAction::build_newest;
    return d;
  }
  if (now >= deadline) {
    d.action = RebuildAction::give_up;
    return d;
  }
  // Wake when the failure's grace ends (the view becomes usable again), else at the deadline; a change
  // (a view, a verdict, the source stopping) wakes the shell sooner.
  const auto grace_end = s.broken_since + kUnconfirmedFailureGrace;
  d.action = RebuildAction::wait;
  d.wake = grace_end > now ? std::min(deadline, grace_end + std::chrono::milliseconds(1)) : deadline;
  return d;
}

BuildFailure on_build_failed(const RebuildState& state, uint64_t epoch, bool timed_out, RebuildClock::time_point now,
                             RebuildClock::time_point deadline) {
  const bool local = state.failure_is_local(epoch, now);
  if (timed_out && (!local || now >= deadline)) return BuildFailure::rethrow;
  return local ? BuildFailure::record_attempt : BuildFailure::decide_again;
}

}  // namespace shoal::session

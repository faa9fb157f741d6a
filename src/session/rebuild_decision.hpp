// The session's rebuild decision: given what it knows (the newest committed view, the communicator it
// holds, a failed attempt, a failure verdict and its grace, the source of views) and the time, whether
// to use the communicator it holds, rebuild the same view again, build the newest view, wait, or give
// up. A pure function of a small state and the time, like comm::plan_rebuild: SessionCore::communicator()
// only waits and acts on what it returns.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

namespace shoal::session {

using RebuildClock = std::chrono::steady_clock;

// How long a member's failure is waited out for the view that removes it (see SessionCore).
inline constexpr std::chrono::milliseconds kUnconfirmedFailureGrace{5'000};

// A communicator (or a build) that failed with every member of its view alive: its epoch and attempt.
struct FailedAttempt {
  uint64_t epoch = 0;
  uint32_t attempt = 0;
  bool operator==(const FailedAttempt&) const = default;
};

struct RebuildState {
  bool stopped = false;                 // the source of views is gone
  std::optional<uint64_t> latest_epoch;  // the newest committed view, if any
  bool latest_includes_me = false;       // that view holds this rank (name, generation, slot)
  // The newest epoch a member of which was reported failed, and when (0 and the epoch of the clock: none).
  uint64_t broken_epoch = 0;
  RebuildClock::time_point broken_since{};
  struct Held {
    uint64_t epoch = 0;
    uint32_t attempt = 0;
    bool aborted = false;
  };
  std::optional<Held> comm;  // the communicator the session holds, if any
  std::optional<FailedAttempt> failed;

  // A member of `epoch` (or a newer one) was reported failed less than the grace before `now`.
  bool fresh_failure(uint64_t epoch, RebuildClock::time_point now) const {
    return broken_epoch >= epoch && now < broken_since + kUnconfirmedFailureGrace;
  }
  // The newest view holds this rank and no failure of a member of it is fresh.
  bool latest_usable(RebuildClock::time_point now) const {
    return latest_epoch && latest_includes_me && !fresh_failure(*latest_epoch, now);
  }
  // A communicator of `epoch` that failed can be rebuilt for the same view: the view is the newest, holds
  // this rank, and no member of it failed lately (so no newer view is coming to replace it).
  bool failure_is_local(uint64_t epoch, RebuildClock::time_point now) const {
    return !stopped && latest_epoch == epoch && latest_usable(now);
  }
};

enum class RebuildAction {
  use_current,     // the communicator held is the newest view's and works: return it
  retry_same_view, // attempt `retry_after` of the newest view failed with every member alive: agree, build the next
  build_newest,    // build the newest view (the held communicator, if any, is the previous one)
  wait,            // wait for a change, at most until `wake`, then decide again
  stop,            // the source of views is gone: fail with its reason
  give_up,         // no usable view before the deadline: a Timeout
};

struct RebuildDecision {
  RebuildAction action = RebuildAction::wait;
  uint32_t retry_after = 0;                  // retry_same_view: the attempt every rank must be through with
  RebuildClock::time_point wake{};           // wait: decide again at the latest then
  std::optional<FailedAttempt> failed;       // what the session's failed attempt becomes
  bool operator==(const RebuildDecision&) const = default;
};

// What communicator() does next. A member's failure is waited out for a newer view; if none comes within
// the grace (gossip took the member back, the keeper removed nobody), the view is used again: rebuilt as
// a retry of the failed attempt, never under the keys its first build already used.
RebuildDecision decide_rebuild(RebuildState state, RebuildClock::time_point now, RebuildClock::time_point deadline);

// A build (or the agreement before it) of attempt `attempt` of `epoch` failed: `timed_out` when a peer
// never connected, else a peer failed it or the view moved on.
enum class BuildFailure {
  rethrow,         // the timeout is the caller's: the view is no longer the one to retry, or the deadline passed
  record_attempt,  // every member lives: this attempt failed; decide again (a retry of it)
  decide_again,    // the view moved on: decide again (a newer view)
};
BuildFailure on_build_failed(const RebuildState& state, uint64_t epoch, bool timed_out, RebuildClock::time_point now,
                             RebuildClock::time_point deadline);

}  // namespace shoal::session

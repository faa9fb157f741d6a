// decide_rebuild and on_build_failed: one table of session states, each with what the session must do.
#include "session/rebuild_decision.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using shoal::session::BuildFailure;
using shoal::session::decide_rebuild;
using shoal::session::FailedAttempt;
using shoal::session::kUnconfirmedFailureGrace;
using shoal::session::on_build_failed;
using shoal::session::RebuildAction;
using shoal::session::RebuildClock;
using shoal::session::RebuildDecision;
using shoal::session::RebuildState;
using namespace std::chrono_literals;

namespace {

const RebuildClock::time_point kNow = RebuildClock::time_point{} + 1000s;
const RebuildClock::time_point kDeadline = kNow + 30s;

// The newest view is epoch 5 and holds this rank; no failure was ever reported.
RebuildState newest(uint64_t epoch = 5) {
  RebuildState s;
  s.latest_epoch = epoch;
  s.latest_includes_me = true;
  return s;
}
RebuildState holding(RebuildState s, uint64_t epoch, uint32_t attempt, bool aborted) {
  s.comm = RebuildState::Held{epoch, attempt, aborted};
  return s;
}
RebuildState broken(RebuildState s, uint64_t epoch, std::chrono::milliseconds ago) {
  s.broken_epoch = epoch;
  s.broken_since = kNow - ago;
  return s;
}
RebuildState broken_at(RebuildState s, uint64_t epoch, RebuildClock::time_point since) {
  s.broken_epoch = epoch;
  s.broken_since = since;
  return s;
}
RebuildState with_failed(RebuildState s, uint64_t epoch, uint32_t attempt) {
  s.failed = FailedAttempt{epoch, attempt};
  return s;
}

struct Row {
  std::string name;
  RebuildState state;
  RebuildClock::time_point now;
  RebuildDecision want;
};

RebuildDecision act(RebuildAction a, std::optional<FailedAttempt> failed = std::nullopt, uint32_t retry_after = 0) {
  RebuildDecision d;
  d.action = a;
  d.failed = failed;
  d.retry_after = retry_after;
  return d;
}
RebuildDecision wait_until(RebuildClock::time_point wake, std::optional<FailedAttempt> failed = std::nullopt) {
  RebuildDecision d = act(RebuildAction::wait, failed);
  d.wake = wake;
  return d;
}

}  // namespace

TEST_CASE("the rebuild decision, one row per branch") {
  const auto fresh = 1s;              // a failure verdict well within the grace
  const auto old = kUnconfirmedFailureGrace + 1s;  // a verdict whose grace has passed
  RebuildState stopped = newest();
  stopped.stopped = true;
  RebuildState not_mine = newest();
  not_mine.latest_includes_me = false;
  const std::vector<Row> rows = {
      {"a working communicator of the newest view is used", holding(newest(), 5, 0, false), kNow,
       act(RebuildAction::use_current)},
      {"a working communicator of the newest view is used even with a stale failed attempt",
       with_failed(holding(newest(), 5, 2, false), 4, 0), kNow, act(RebuildAction::use_current, FailedAttempt{4, 0})},
      {"no communicator and a usable newest view: build it", newest(), kNow, act(RebuildAction::build_newest)},
      {"an older working communicator: build the newest view on it", holding(newest(), 4, 0, false), kNow,
       act(RebuildAction::build_newest)},
      {"an aborted communicator of an older view: build the newest", holding(newest(), 4, 1, true), kNow,
       act(RebuildAction::build_newest)},
      {"an aborted communicator of the newest view, every member alive: a retry of its attempt",
       holding(newest(), 5, 1, true), kNow, act(RebuildAction::retry_same_view, FailedAttempt{5, 1}, 1)},
      {"a recorded failed attempt of the newest view: a retry of that attempt", with_failed(newest(), 5, 3), kNow,
       act(RebuildAction::retry_same_view, FailedAttempt{5, 3}, 3)},
      {"a recorded failed attempt wins over the aborted communicator's", with_failed(holding(newest(), 5, 1, true), 5, 2),
       kNow, act(RebuildAction::retry_same_view, FailedAttempt{5, 2}, 2)},
      {"a failed attempt of an older view is forgotten, the newest view built", with_failed(newest(), 4, 0), kNow,
       act(RebuildAction::build_newest)},
      {"an old failed attempt forgotten, the newest view's aborted communicator retried",
       with_failed(holding(newest(), 5, 0, true), 4, 2), kNow,
       act(RebuildAction::retry_same_view, FailedAttempt{5, 0}, 0)},
      {"a fresh failure in the newest view: wait for the view that removes the member",
       broken(holding(newest(), 5, 0, true), 5, fresh), kNow, wait_until(kNow - fresh + kUnconfirmedFailureGrace + 1ms)},
      {"a fresh failure: the wait ends at the deadline when that comes first",
       broken_at(holding(newest(), 5, 0, true), 5, kDeadline - 2s), kDeadline - 1s, wait_until(kDeadline)},
      {"a failure whose grace passed with no newer view: the same view again, as a retry",
       broken(holding(newest(), 5, 0, true), 5, old), kNow, act(RebuildAction::retry_same_view, FailedAttempt{5, 0}, 0)},
      {"a fresh failure of an older epoch does not hold back the newest view", broken(holding(newest(), 4, 0, true), 4, fresh),
       kNow, act(RebuildAction::build_newest)},
      {"a fresh failure in the newest view keeps a failed attempt of it, and waits",
       broken(with_failed(newest(), 5, 1), 5, fresh), kNow,
       wait_until(kNow - fresh + kUnconfirmedFailureGrace + 1ms, FailedAttempt{5, 1})},
      {"no view yet: wait until the deadline", RebuildState{}, kNow, wait_until(kDeadline)},
      {"no view by the deadline: give up", RebuildState{}, kDeadline, act(RebuildAction::give_up)},
      {"a newest view without this rank: wait", not_mine, kNow, wait_until(kDeadline)},
      {"a newest view without this rank at the deadline: give up", not_mine, kDeadline + 1ms,
       act(RebuildAction::give_up)},
      {"a fresh failure at the deadline: give up", broken_at(newest(), 5, kDeadline - 1s), kDeadline,
       act(RebuildAction::give_up)},
      {"the source stopped: stop", stopped, kNow, act(RebuildAction::stop)},
      {"the source stopped: no retry of a failed attempt either", with_failed(holding(stopped, 5, 1, true), 5, 1), kNow,
       act(RebuildAction::stop, FailedAttempt{5, 1})},
  };
  for (const auto& row : rows) {
    CAPTURE(row.name);
    const RebuildDecision got = decide_rebuild(row.state, row.now, kDeadline);
    CHECK(static_cast<int>(got.action) == static_cast<int>(row.want.action));
    CHECK(got.retry_after == row.want.retry_after);
    CHECK(got.failed == row.want.failed);
    if (row.want.action == RebuildAction::wait) CHECK(got.wake == row.want.wake);
  }
}

TEST_CASE("a failed build: recorded as a failed attempt only while every member of its view lives") {
  struct BuildRow {
    std::string name;
    RebuildState state;
    uint64_t epoch;
    bool timed_out;
    RebuildClock::time_point now;
    BuildFailure want;
  };
  const std::vector<BuildRow> rows = {
      {"a timeout with every member alive: one more failed attempt", newest(), 5, true, kNow,
       BuildFailure::record_attempt},
      {"a timeout at the deadline is the caller's", newest(), 5, true, kDeadline, BuildFailure::rethrow},
      {"a timeout after a newer view came is the caller's", newest(6), 5, true, kNow, BuildFailure::rethrow},
      {"a timeout after a member failed is the caller's", broken(newest(), 5, 1s), 5, true, kNow,
       BuildFailure::rethrow},
      {"a peer failed the build, every member alive: a failed attempt", newest(), 5, false, kNow,
       BuildFailure::record_attempt},
      {"a peer failed the build at the deadline: still a failed attempt (the next decision gives up)", newest(), 5,
       false, kDeadline, BuildFailure::record_attempt},
      {"the view moved on during the build: decide again", newest(6), 5, false, kNow, BuildFailure::decide_again},
      {"a member failed during the build: decide again", broken(newest(), 5, 1s), 5, false, kNow,
       BuildFailure::decide_again},
  };
  for (const auto& row : rows) {
    CAPTURE(row.name);
    CHECK(on_build_failed(row.state, row.epoch, row.timed_out, row.now, kDeadline) == row.want);
  }
}

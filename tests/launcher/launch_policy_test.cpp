// LaunchPolicy: when the launcher starts, stops and restarts workers, and when it gives up or is done.
// Also the line splitter that prefixes the workers' output.
#include "launcher/launch_policy.hpp"

#include <doctest/doctest.h>

#include "launcher/worker_output.hpp"

using shoal::gossip::Time;
using shoal::launcher::LaunchLimits;
using shoal::launcher::LaunchPolicy;
using shoal::launcher::LaunchStep;
using shoal::launcher::LineSplitter;
using shoal::launcher::WorkerMode;
using Slots = std::vector<uint32_t>;

namespace {

Time sec(double s) { return Time(static_cast<int64_t>(s * 1e6)); }

LaunchLimits limits(WorkerMode mode = WorkerMode::restart, uint32_t max_restarts = 2) {
  LaunchLimits l;
  l.mode = mode;
  l.max_restarts = max_restarts;
  l.failure_grace = sec(5);
  l.exit_barrier = sec(3);
  return l;
}

bool nothing(const LaunchStep& s) { return !s.stop_all && s.start_slots.empty() && !s.leave_with; }

}  // namespace

TEST_CASE("the first view with ranks here starts one worker per slot; a view without them starts none") {
  LaunchPolicy p(limits());
  CHECK(nothing(p.on_view(1, 0, sec(0))));
  const auto step = p.on_view(2, 2, sec(1));
  CHECK(step.start_slots == Slots{0, 1});
  CHECK(step.start_epoch == 2);
  CHECK(p.live() == 2);
  CHECK(p.restart_count(2) == 1);  // epoch - 1: the same number on every host
}

TEST_CASE("restart mode: a new view stops the workers and starts them again once every one has exited") {
  LaunchPolicy p(limits());
  p.on_view(1, 2, sec(0));
  auto step = p.on_view(2, 2, sec(1));
  CHECK(step.stop_all);
  CHECK(step.start_slots.empty());
  CHECK(nothing(p.on_exit(0, false, sec(1.1))));  // stopped on request: no failure
  step = p.on_exit(1, false, sec(1.2));
  CHECK(step.start_slots == Slots{0, 1});
  CHECK(step.start_epoch == 2);
  CHECK(p.restarts() == 0);
}

TEST_CASE("restart mode: views that arrive while stopping lead to one start, for the newest") {
  LaunchPolicy p(limits());
  p.on_view(1, 1, sec(0));
  CHECK(p.on_view(2, 1, sec(1)).stop_all);
  CHECK(nothing(p.on_view(3, 1, sec(1.1))));
  const auto step = p.on_exit(0, false, sec(1.2));
  CHECK(step.start_epoch == 3);
}

TEST_CASE("restart mode: a view without this host's ranks stops the workers and starts none") {
  LaunchPolicy p(limits());
  p.on_view(1, 1, sec(0));
  CHECK(p.on_view(2, 0, sec(1)).stop_all);
  CHECK(nothing(p.on_exit(0, false, sec(1.1))));
  CHECK(p.on_view(3, 1, sec(2)).start_slots == Slots{0});
}

TEST_CASE("restart mode: a failure explained by a view change within the grace is not counted") {
  LaunchPolicy p(limits());
  p.on_view(1, 2, sec(0));
  auto step = p.on_exit(1, false, sec(10));  // a peer died: the collective failed first
  CHECK(step.stop_all);                      // the other worker of this host stops too
  CHECK(nothing(p.on_exit(0, false, sec(10.1))));
  step = p.on_view(2, 2, sec(11));  // the view change that explains it
  CHECK(step.start_slots == Slots{0, 1});
  CHECK(step.start_epoch == 2);
  CHECK(p.restarts() == 0);
}

TEST_CASE("restart mode: an unexplained failure restarts after the grace, up to max-restarts, then leaves 1") {
  LaunchPolicy p(limits(WorkerMode::restart, 1));
  p.on_view(1, 1, sec(0));
  auto step = p.on_exit(0, false, sec(1));
  REQUIRE(step.wake_at.has_value());
  CHECK(*step.wake_at == sec(6));
  CHECK(nothing(p.on_tick(sec(3))));  // early tick: still in the grace
  step = p.on_tick(sec(6));
  CHECK(step.start_slots == Slots{0});
  CHECK(step.start_epoch == 1);
  CHECK(p.restarts() == 1);
  step = p.on_exit(0, false, sec(7));
  step = p.on_tick(sec(12));
  CHECK(step.leave_with == 1);
  CHECK(step.start_slots.empty());
  CHECK(p.leaving());
}

TEST_CASE("every worker exiting 0 ends the job here: no restart on later views, leave 0 after the barrier") {
  LaunchPolicy p(limits());
  p.on_view(1, 2, sec(0));
  CHECK(nothing(p.on_exit(0, true, sec(5))));
  CHECK(nothing(p.on_view(2, 2, sec(5.5))));  // a host that finished first left: no restart
  auto step = p.on_exit(1, true, sec(6));
  REQUIRE(step.wake_at.has_value());
  CHECK(!step.leave_with);
  step = p.on_tick(*step.wake_at);
  CHECK(step.leave_with == 0);
}

TEST_CASE("a failure among finishing workers is still a failure") {
  LaunchPolicy p(limits(WorkerMode::restart, 0));
  p.on_view(1, 2, sec(0));
  p.on_exit(0, true, sec(5));
  auto step = p.on_exit(1, false, sec(6));
  REQUIRE(step.wake_at.has_value());
  step = p.on_tick(*step.wake_at);
  CHECK(step.leave_with == 1);
}

TEST_CASE("shutdown stops the workers and leaves 0 once they are gone; without workers at once") {
  LaunchPolicy p(limits());
  p.on_view(1, 2, sec(0));
  auto step = p.on_shutdown();
  CHECK(step.stop_all);
  CHECK(!step.leave_with);
  CHECK(nothing(p.on_exit(0, false, sec(1))));
  step = p.on_exit(1, false, sec(1));
  CHECK(step.leave_with == 0);
  CHECK(nothing(p.on_view(2, 2, sec(2))));

  LaunchPolicy idle(limits());
  CHECK(idle.on_shutdown().leave_with == 0);
}

TEST_CASE("connect mode: views never restart workers; a failed worker alone starts again, then the host leaves") {
  LaunchPolicy p(limits(WorkerMode::connect, 1));
  CHECK(p.on_view(1, 2, sec(0)).start_slots == Slots{0, 1});
  CHECK(nothing(p.on_view(2, 2, sec(1))));
  CHECK(nothing(p.on_view(3, 0, sec(2))));
  auto step = p.on_exit(1, false, sec(3));
  CHECK(step.start_slots == Slots{1});
  CHECK(!step.stop_all);
  CHECK(p.restart_count(3) == 1);
  step = p.on_exit(1, false, sec(4));
  CHECK(step.leave_with == 1);
  CHECK(step.stop_all);  // slot 0 is stopped before leaving
}

TEST_CASE("lines are split at newlines across reads, and a line without end is cut at the limit") {
  LineSplitter s(8);
  std::vector<std::string> lines;
  const auto add = [&](std::string_view l) { lines.emplace_back(l); };
  const std::string a = "one\ntw", b = "o\n\nthree";
  s.feed(a, add);
  s.feed(b, add);
  CHECK(lines == std::vector<std::string>{"one", "two", ""});
  s.feed(std::string_view("456789abc"), add);  // "three456789abc": 8 bytes out, 6 kept
  CHECK(lines.back() == "three456");
  s.flush(add);
  CHECK(lines.back() == "789abc");
  s.flush(add);
  CHECK(lines.size() == 5);
}

TEST_CASE("connect mode, drain: views leave the workers alone, their exits are final, the last one leaves at once") {
  LaunchPolicy p(limits(WorkerMode::connect));
  p.on_view(1, 2, sec(0));
  auto step = p.on_drain(sec(60), sec(1));
  CHECK(nothing(step));
  CHECK(step.wake_at == sec(60));
  CHECK(p.draining());
  CHECK(nothing(p.on_view(2, 0, sec(2))));          // the view without this host stops nobody
  CHECK(nothing(p.on_exit(0, true, sec(2.5))));     // one done; the other still saves
  step = p.on_exit(1, true, sec(2.6));
  REQUIRE(step.leave_with);
  CHECK(*step.leave_with == 0);  // no exit barrier: the others already go on without this host
  CHECK(p.leaving());
}

TEST_CASE("drain: a worker that fails while draining is not started again, and the host leaves with status 1") {
  LaunchPolicy p(limits(WorkerMode::connect));
  p.on_view(1, 1, sec(0));
  p.on_drain(sec(60), sec(1));
  const auto step = p.on_exit(0, false, sec(2));
  CHECK(step.start_slots.empty());
  REQUIRE(step.leave_with);
  CHECK(*step.leave_with == 1);
}

TEST_CASE("drain: at the deadline the workers still running are stopped, then the host leaves with status 0") {
  LaunchPolicy p(limits(WorkerMode::connect));
  p.on_view(1, 2, sec(0));
  p.on_drain(sec(10), sec(1));
  auto step = p.on_tick(sec(10));
  CHECK(step.stop_all);
  CHECK(!step.leave_with);
  CHECK(nothing(p.on_exit(0, false, sec(10.1))));
  step = p.on_exit(1, false, sec(10.2));
  REQUIRE(step.leave_with);
  CHECK(*step.leave_with == 0);
  CHECK(nothing(p.on_drain(sec(20), sec(11))));  // once leaving, a second notice changes nothing
}

TEST_CASE("drain before any worker ran: the host leaves at once") {
  LaunchPolicy p(limits(WorkerMode::connect));
  const auto step = p.on_drain(sec(10), sec(1));
  REQUIRE(step.leave_with);
  CHECK(*step.leave_with == 0);
}

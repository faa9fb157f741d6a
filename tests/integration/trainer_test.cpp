// The example trainer on loopback: real processes with embedded agents and Gloo. A host killed with
// SIGKILL mid-training costs the survivors one rebuild, never a restart, and every step's allreduce
// check stays ok; a new host joins at a step boundary with the others' state.
#include <doctest/doctest.h>
#include <signal.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "trainer_cluster.hpp"

using namespace std::chrono_literals;

namespace {

using shoal::test::StepRecord;
using shoal::test::TrainerCluster;
using shoal::test::check_survivors;
using shoal::test::reached_world;

// Starts t0..t3, waits until all four train in one world of 4, kills `victim` with SIGKILL.
double start_four_and_kill(TrainerCluster& c, const std::string& victim, int steps) {
  const std::string seed = c.start("t0", "", steps).addr;
  for (const char* n : {"t1", "t2", "t3"}) c.start(n, seed, steps);
  REQUIRE_MESSAGE(c.until([&] {
    for (const char* n : {"t0", "t1", "t2", "t3"}) {
      if (!reached_world(c[n], 4)) return false;
    }
    return true;
  }, 30s), "the four trainers never trained together; t0's log:\n" << c.log("t0"));
  c.pump(300ms);
  const double kill_t =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  c[victim].process->send_signal(SIGKILL);
  c[victim].exit_code = 137;
  return kill_t;
}

}  // namespace

TEST_CASE("killing a non-zero-rank host of 4 trainers costs one rebuild at world 3, and every step stays ok") {
  TrainerCluster c;
  const int steps = 150;
  const double kill_t = start_four_and_kill(c, "t2", steps);
  c.finish(60s);
  check_survivors(c, {"t0", "t1", "t3"}, kill_t, steps, 3);
}

TEST_CASE("SIGTERM to a trainer (scancel, systemctl stop) leaves gracefully: the others lose no timeout") {
  TrainerCluster c;
  const int steps = 150;
  const std::string seed = c.start("t0", "", steps, {"--log-level", "info"}).addr;
  for (const char* n : {"t1", "t2"}) c.start(n, seed, steps, {"--log-level", "info"});
  REQUIRE(c.until([&] { return reached_world(c["t0"], 3) && reached_world(c["t1"], 3) && reached_world(c["t2"], 3); },
                  30s));
  c.pump(300ms);
  const double term_t = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  c["t2"].process->send_signal(SIGTERM);
  // The trainer leaves first, then ends as SIGTERM asks (killed by the signal, as without a handler).
  const auto code = c["t2"].process->wait_exit(10s);
  REQUIRE(code.has_value());
  CHECK(*code == 128 + SIGTERM);
  c["t2"].exit_code = *code;
  CHECK(c.log("t2").find("left the cluster after SIGTERM") != std::string::npos);
  c.finish(60s);
  check_survivors(c, {"t0", "t1"}, term_t, steps, 2);
  // The survivors learnt of a leave, not of a death found by probing.
  for (const char* n : {"t0", "t1"}) {
    CHECK_MESSAGE(c.log(n).find("member t2 left") != std::string::npos, c.log(n));
    CHECK(c.log(n).find("t2 dead") == std::string::npos);
  }
}

TEST_CASE("killing the host of rank 0 (also the proposer, the smallest name) costs one rebuild") {
  TrainerCluster c;
  const int steps = 150;
  const double kill_t = start_four_and_kill(c, "t0", steps);
  c.finish(60s);
  check_survivors(c, {"t1", "t2", "t3"}, kill_t, steps, 3);
}

TEST_CASE("a host that joins after a kill grows the world back to 4 with the others' state") {
  TrainerCluster c;
  const int steps = 200;
  start_four_and_kill(c, "t3", steps);
  REQUIRE(c.until([&] { return reached_world(c["t0"], 3); }, 15s));
  c.start("t4", c["t1"].addr, steps);
  c.finish(90s);
  REQUIRE_MESSAGE(!c["t4"].steps.empty(), "the joiner never trained; its log:\n" << c.log("t4"));
  for (const std::string n : {"t0", "t1", "t2", "t4"}) {
    auto& t = c[n];
    INFO(n << " log:\n" << c.log(n));
    CHECK(t.exit_code == std::optional<int>(0));
    REQUIRE(!t.steps.empty());
    CHECK(t.steps.back().step == static_cast<uint64_t>(steps - 1));
    // (The last steps may run in a smaller world: a host that finished first leaves, and a rank whose
    // last allreduce had not completed redoes that step without it.)
    const bool grew = std::any_of(t.steps.begin(), t.steps.end(), [&](const StepRecord& s) {
      return s.world == 4 && s.t > c["t4"].steps.front().t - 1e-3;
    });
    CHECK_MESSAGE(grew, n << " never trained in the regrown world of 4");
    for (const auto& s : t.steps) CHECK_MESSAGE(s.ok, n << " step " << s.step << " failed its check");
  }
  // The joiner's first step continues the job's step count instead of starting from zero.
  CHECK(c["t4"].steps.front().step > 0);
  CHECK(c["t4"].steps.front().world == 4);
}

TEST_CASE("a collective that fails while every member lives is rebuilt for the same view, and training goes on") {
  // --abort-at: rank 0 aborts its own communicator before step 40's allreduce, as a reset connection
  // would. No member failed, so no new view comes: the three ranks rebuild for the same epoch (attempt 1).
  TrainerCluster c;
  const int steps = 80;
  const std::string seed = c.start("t0", "", steps, {"--abort-at", "40"}).addr;
  for (const char* n : {"t1", "t2"}) c.start(n, seed, steps, {"--abort-at", "40"});
  c.finish(90s);
  for (const std::string n : {"t0", "t1", "t2"}) {
    auto& t = c[n];
    INFO(n << " log:\n" << c.log(n));
    CHECK(t.exit_code == std::optional<int>(0));
    REQUIRE(!t.steps.empty());
    CHECK(t.steps.back().step == static_cast<uint64_t>(steps - 1));
    CHECK(std::all_of(t.steps.begin(), t.steps.end(), [](const StepRecord& s) { return s.ok; }));
    // One world of 3 throughout, one epoch once all three trained together, attempt 1 from step 40 on.
    const auto first3 = std::find_if(t.steps.begin(), t.steps.end(), [](const StepRecord& s) { return s.world == 3; });
    REQUIRE(first3 != t.steps.end());
    CHECK(first3->step < 40);
    const bool one_epoch = std::all_of(first3, t.steps.end(), [&](const StepRecord& s) {
      return s.epoch == first3->epoch && s.world == 3;
    });
    CHECK_MESSAGE(one_epoch, n << " trained in another epoch or world after the fault");
    const auto retried = std::find_if(t.steps.begin(), t.steps.end(), [](const StepRecord& s) { return s.attempt > 0; });
    REQUIRE_MESSAGE(retried != t.steps.end(), n << " never rebuilt for the same view");
    CHECK(retried->attempt == 1);
    CHECK(retried->rebuilt);
    CHECK(retried->step <= 40);  // the failed step is redone, nothing skipped
    CHECK(t.steps.back().attempt == 1);
  }
}

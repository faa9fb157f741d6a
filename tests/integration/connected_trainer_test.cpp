// Trainers that follow a separate `shoal agent` over its control socket, one per GPU slot: the agents
// form the job, each trainer gets its slot's rank, and losing a host (its agent and its trainers,
// killed with SIGKILL) costs the others one rebuild in the same processes.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <string>

#include "trainer_cluster.hpp"

using namespace std::chrono_literals;
using shoal::test::TrainerCluster;

TEST_CASE("trainers connected to 3 agents of 2 slots train as one world of 6, and of 4 after a host is killed") {
  TrainerCluster c;
  const int steps = 150;
  const std::string seed = c.start_agent("a", "", 2);
  c.start_agent("b", seed, 2);
  c.start_agent("c", seed, 2);
  const char* trainers[] = {"a0", "a1", "b0", "b1", "c0", "c1"};
  for (const std::string t : trainers) c.start_connected(t, t.substr(0, 1), t[1] - '0', steps);
  REQUIRE_MESSAGE(c.until([&] {
    for (const char* t : trainers) {
      if (!shoal::test::reached_world(c[t], 6)) return false;
    }
    return true;
  }, 30s), "the six trainers never trained together; a0's log:\n" << c.log("a0"));
  // Ranks follow the view: a's slots first (it joined first), slots of one host contiguous.
  CHECK(c["a0"].steps.back().rank == 0);
  CHECK(c["a1"].steps.back().rank == 1);
  c.pump(300ms);
  const double kill_t = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  c.kill_agent("b");
  c["b0"].process->kill_and_reap();
  c["b0"].exit_code = 137;
  c["b1"].process->kill_and_reap();
  c["b1"].exit_code = 137;
  c.finish(60s);
  shoal::test::check_survivors(c, {"a0", "a1", "c0", "c1"}, kill_t, steps, 4);
}

TEST_CASE("connected trainers whose collective fails while every agent lives rebuild for the same view") {
  // 2 agents of 2 slots; rank 0 aborts its communicator before step 30 (--abort-at): all four ranks
  // rebuild as attempt 1 of the same epoch, and every step stays ok.
  TrainerCluster c;
  const int steps = 60;
  const std::string seed = c.start_agent("a", "", 2);
  c.start_agent("b", seed, 2);
  const char* trainers[] = {"a0", "a1", "b0", "b1"};
  for (const std::string t : trainers) c.start_connected(t, t.substr(0, 1), t[1] - '0', steps, {"--abort-at", "30"});
  c.finish(90s);
  for (const std::string t : trainers) {
    INFO(t << " log:\n" << c.log(t));
    CHECK(c[t].exit_code == std::optional<int>(0));
    REQUIRE(!c[t].steps.empty());
    const auto& last = c[t].steps.back();
    CHECK(last.step == static_cast<uint64_t>(steps - 1));
    CHECK(last.world == 4);
    CHECK(last.attempt == 1);
    uint64_t epoch_at_fault = 0;
    for (const auto& s : c[t].steps) {
      CHECK(s.ok);
      if (s.step == 29) epoch_at_fault = s.epoch;
    }
    CHECK(last.epoch == epoch_at_fault);  // no new view: the same epoch, rebuilt
  }
}

TEST_CASE("a trainer asking for a slot its agent does not have is refused with a clear error") {
  TrainerCluster c;
  c.start_agent("a", "", 1);
  auto r = shoal::test::run_command({TRAINER_BINARY, "--control", c.socket_of("a"), "--slot", "3", "--steps", "1"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("slot 3 does not exist") != std::string::npos);
}

TEST_CASE("connected trainers of a keyed cluster seal their own connections with their agent's key file") {
  TrainerCluster c;
  shoal::test::TempDir keys;
  const std::string key_file = keys.path() + "/cluster.key";
  {
    auto r = shoal::test::run_command({SHOAL_BINARY, "keygen"});
    REQUIRE(r.exit_code == 0);
    std::ofstream(key_file) << r.out;
    ::chmod(key_file.c_str(), 0600);
  }
  const int steps = 40;
  const std::string seed = c.start_agent("a", "", 1, {"--key-file", key_file});
  c.start_agent("b", seed, 1, {"--key-file", key_file});
  c.start_connected("a0", "a", 0, steps);
  c.start_connected("b0", "b", 0, steps);
  // Rendezvous and collectives need the trainers' own sealed hellos to pass the agents' listeners.
  REQUIRE_MESSAGE(c.until([&] { return shoal::test::reached_world(c["a0"], 2) && shoal::test::reached_world(c["b0"], 2); },
                          30s),
                  "the keyed trainers never trained together; a0's log:\n" << c.log("a0"));
  c.finish(60s);
  CHECK(c["a0"].exit_code == 0);
  CHECK(c["b0"].exit_code == 0);
}

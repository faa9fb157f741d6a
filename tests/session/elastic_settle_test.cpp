// ElasticLoop's settling after a rebuild, with real parts: three sessions in this process run the loop on
// their own threads over real Gloo communicators (rendezvous through a real agent); rank 1 aborts its
// communicator in the middle of a step, every rank rolls back and the view is rebuilt. When every rank
// holds the same state of the same step (data-parallel training), nobody's state is handed out again:
// the only load after the failure is each rank's own rollback. When the states differ, every rank
// adopts the one of the lowest rank that holds the newest step, as before.
#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <vector>

#include "fed_session.hpp"
#include "shoal/elastic_loop.hpp"
#include "shoal/errors.hpp"

using namespace std::chrono_literals;
using shoal::test::FedSession;
using shoal::test::make_view;
using shoal::test::RunningAgent;

namespace {

constexpr uint64_t kSteps = 8;
constexpr uint64_t kFailAt = 4;

// What one rank's hooks saw.
struct Seen {
  int loads = 0;
  std::vector<uint8_t> loaded_owner;  // the owner byte of every state it loaded
  int synced = 0;
  uint64_t synced_step = 0;
  int synced_from = -1;
  uint64_t rebuilds = 0;
  std::vector<uint8_t> final_state;
};

// The state: the step count and an owner byte (the rank's own number when `per_rank`, else 0).
std::vector<std::byte> encode(uint64_t steps, uint8_t owner) {
  std::vector<std::byte> out(sizeof steps + 1);
  std::memcpy(out.data(), &steps, sizeof steps);
  out.back() = std::byte{owner};
  return out;
}

// Runs ElasticLoop on three fed sessions; rank 1 aborts its communicator at step kFailAt (once).
std::vector<Seen> run_three(bool per_rank) {
  RunningAgent agent{"a", {}};
  REQUIRE(shoal::test::eventually([&] { return agent.epoch >= 1; }, 5s));
  const auto view = make_view(agent.epoch, agent, 3);
  std::vector<std::unique_ptr<FedSession>> sessions;
  for (int i = 0; i < 3; ++i) {
    sessions.push_back(std::make_unique<FedSession>(agent, "n" + std::to_string(i)));
    sessions.back()->feed(view);
  }
  std::atomic<bool> injected{false};
  std::vector<Seen> seen(3);
  std::vector<std::future<void>> runs;
  for (size_t i = 0; i < 3; ++i) {
    runs.push_back(std::async(std::launch::async, [&, i] {
      Seen& me = seen[i];
      std::vector<std::byte> state = encode(0, 0);
      shoal::ElasticHooks hooks;
      hooks.step = [&](shoal::Communicator& comm, uint64_t step) {
        if (step == kFailAt && comm.rank() == 1 && !injected.exchange(true)) comm.abort("a fault injected by the test");
        int64_t v = static_cast<int64_t>(step);
        comm.allreduce(std::span<int64_t>(&v, 1), shoal::ReduceOp::sum);
        CHECK(v == 3 * static_cast<int64_t>(step));
        state = encode(step + 1, per_rank ? static_cast<uint8_t>(comm.rank()) : 0);
      };
      hooks.save = [&] { return state; };
      hooks.load = [&](const std::vector<std::byte>& s) {
        state = s;
        ++me.loads;
        me.loaded_owner.push_back(static_cast<uint8_t>(s.back()));
      };
      hooks.synced = [&](uint64_t next, int from) {
        ++me.synced;
        me.synced_step = next;
        me.synced_from = from;
      };
      shoal::ElasticLoop loop(*sessions[i], hooks);
      me.rebuilds = loop.run(kSteps);
      for (const auto b : state) me.final_state.push_back(static_cast<uint8_t>(b));
    }));
  }
  for (auto& r : runs) r.get();
  return seen;
}

}  // namespace

TEST_CASE("a rebuild where every rank holds the same state of the same step hands out nothing") {
  const auto seen = run_three(false);
  for (size_t r = 0; r < 3; ++r) {
    CAPTURE(r);
    CHECK(seen[r].rebuilds == 1);
    // The first build hands rank 0's state out (ranks 1 and 2 load it once); after the failure each rank
    // only rolls back to its own snapshot: one load more, not two.
    CHECK(seen[r].loads == (r == 0 ? 1 : 2));
    // The synced hook still tells every rank where training resumes and from whom.
    CHECK(seen[r].synced == 1);
    CHECK(seen[r].synced_step == kFailAt);
    CHECK(seen[r].synced_from == 0);
    CHECK(seen[r].final_state == seen[0].final_state);
  }
}

TEST_CASE("a rebuild where the ranks' states differ hands out the state of the lowest rank") {
  const auto seen = run_three(true);
  for (size_t r = 0; r < 3; ++r) {
    CAPTURE(r);
    CHECK(seen[r].rebuilds == 1);
    CHECK(seen[r].synced == 1);
    CHECK(seen[r].synced_step == kFailAt);
    CHECK(seen[r].synced_from == 0);
    if (r == 0) {
      CHECK(seen[r].loads == 1);  // its own rollback; it is the source
    } else {
      // First build, rollback, then rank 0's state of step kFailAt - 1, whose owner byte is 0.
      REQUIRE(seen[r].loads == 3);
      CHECK(seen[r].loaded_owner[1] == r);
      CHECK(seen[r].loaded_owner[2] == 0);
    }
  }
}

// The Gloo backend never leaves a rank hanging: abort() from another thread wakes a blocked
// collective, a peer that disappears turns into ViewChanged, a collective nobody joins into Timeout,
// and a rendezvous that cannot complete into Timeout or ViewChanged.
#include <doctest/doctest.h>

#include <netinet/in.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "comm_wrap/gloo/pair_sockets.hpp"
#include "gloo_world.hpp"
#include "shoal/errors.hpp"

using namespace std::chrono_literals;
using shoal::comm::DataType;
using shoal::comm::GlooOptions;
using shoal::comm::LocalRendezvousStore;
using shoal::comm::ReduceOp;
using shoal::testing::make_gloo_world;
using shoal::testing::ms_between;
using shoal::testing::on_every_rank;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kRanks = 4;
constexpr int kIdle = kRanks - 1;  // the rank that never joins the collective

// Long enough that only an abort or a failure (never the timeout) can end the blocked collectives.
GlooOptions patient() {
  GlooOptions o;
  o.collective_timeout = 20s;
  o.rendezvous_timeout = 10s;
  return o;
}

template <class E>
bool is(const std::exception_ptr& e) {
  if (!e) return false;
  try {
    std::rethrow_exception(e);
  } catch (const E&) {
    return true;
  } catch (...) {
    return false;
  }
}

struct BlockedAllreduce {
  std::vector<std::exception_ptr> errors;
  std::vector<Clock::time_point> woke;
};

// Ranks 0..kIdle-1 start an allreduce that rank kIdle never joins; `interrupt` runs on its own thread
// once they are blocked and returns when it interrupted them.
template <class Interrupt>
BlockedAllreduce block_then(std::vector<std::unique_ptr<shoal::comm::Communicator>>& world, Interrupt interrupt) {
  BlockedAllreduce out;
  out.woke.resize(kRanks);
  std::thread interrupter([&] {
    std::this_thread::sleep_for(300ms);
    interrupt();
  });
  out.errors = on_every_rank(kRanks, [&](int r) {
    if (r == kIdle) return;
    std::vector<float> buf(4096, 1.0f);
    try {
      world[size_t(r)]->allreduce(buf.data(), buf.size(), DataType::f32, ReduceOp::sum);
    } catch (...) {
      out.woke[size_t(r)] = Clock::now();
      throw;
    }
  });
  interrupter.join();
  return out;
}

}  // namespace

TEST_CASE("abort from another thread makes blocked gloo allreduces throw ViewChanged within a second") {
  LocalRendezvousStore store(10);
  auto world = make_gloo_world(kRanks, store, patient());
  Clock::time_point aborted_at;
  const auto run = block_then(world, [&] {
    aborted_at = Clock::now();
    for (int r = 0; r < kIdle; ++r) world[size_t(r)]->abort("host of rank 3 failed");
  });
  for (int r = 0; r < kIdle; ++r) {
    CAPTURE(r);
    REQUIRE(is<shoal::ViewChanged>(run.errors[size_t(r)]));
    const double latency_ms = ms_between(aborted_at, run.woke[size_t(r)]);
    MESSAGE("rank " << r << ": abort to ViewChanged in " << latency_ms << " ms");
    CHECK(latency_ms < 1000.0);
    CHECK(world[size_t(r)]->aborted());
  }
}

// Gloo reports a closed connection only to operations pending on that pair, so aborting one rank
// does not reliably wake a peer blocked on a third rank; shoal's agent aborts every rank of a broken
// epoch, and each abort releases that rank's own collective at once.
TEST_CASE("aborting one rank wakes its own blocked allreduce at once, before the other ranks abort") {
  LocalRendezvousStore store(11);
  auto world = make_gloo_world(kRanks, store, patient());
  Clock::time_point first_abort, other_aborts;
  const auto run = block_then(world, [&] {
    first_abort = Clock::now();
    world[0]->abort("told by the agent");
    std::this_thread::sleep_for(1500ms);
    other_aborts = Clock::now();
    for (int r = 1; r < kIdle; ++r) world[size_t(r)]->abort("told by the agent");
  });
  REQUIRE(is<shoal::ViewChanged>(run.errors[0]));
  CHECK(ms_between(first_abort, run.woke[0]) < 1000.0);
  CHECK(run.woke[0] < other_aborts);
  for (int r = 1; r < kIdle; ++r) {
    CAPTURE(r);
    REQUIRE(is<shoal::ViewChanged>(run.errors[size_t(r)]));
    CHECK(world[size_t(r)]->aborted());
  }
}

TEST_CASE("a rank whose communicator is destroyed mid-run makes its blocked peers throw ViewChanged") {
  LocalRendezvousStore store(12);
  auto world = make_gloo_world(kRanks, store, patient());
  Clock::time_point destroyed_at;
  const auto run = block_then(world, [&] {
    destroyed_at = Clock::now();
    world[kIdle].reset();
  });
  for (int r = 0; r < kIdle; ++r) {
    CAPTURE(r);
    REQUIRE(is<shoal::ViewChanged>(run.errors[size_t(r)]));
    CHECK(ms_between(destroyed_at, run.woke[size_t(r)]) < 1000.0);
  }
}

TEST_CASE("a collective that fails on a closed connection names the lost peer's rank (evidence for the agent)") {
  LocalRendezvousStore store(13);
  std::mutex mu;
  std::vector<int> named;
  GlooOptions o = patient();
  o.on_peer_lost = [&](int peer) {
    std::lock_guard lock(mu);
    named.push_back(peer);
  };
  auto world = make_gloo_world(kRanks, store, o);
  const auto run = block_then(world, [&] { world[kIdle].reset(); });
  for (int r = 0; r < kIdle; ++r) REQUIRE(is<shoal::ViewChanged>(run.errors[size_t(r)]));
  std::lock_guard lock(mu);
  REQUIRE_FALSE(named.empty());
  CHECK(std::find(named.begin(), named.end(), kIdle) != named.end());
  for (int peer : named) CHECK((peer >= 0 && peer < kRanks));
}

TEST_CASE("Gloo's \"[ip]:port\" is read back as an endpoint; its \"[file:line]\" prefix is not one") {
  using shoal::comm::endpoint_in_brackets;
  const auto v4 = endpoint_in_brackets("[127.0.0.1]:40123: Connection reset by peer");
  REQUIRE(v4);
  CHECK(v4->ss_family == AF_INET);
  CHECK(ntohs(reinterpret_cast<const sockaddr_in&>(*v4).sin_port) == 40123);
  const auto v6 = endpoint_in_brackets("[::1]:5");
  REQUIRE(v6);
  CHECK(v6->ss_family == AF_INET6);
  CHECK_FALSE(endpoint_in_brackets("[../gloo/transport/tcp/pair.cc:598] Connection closed by peer [1.2.3.4]:5"));
  CHECK_FALSE(endpoint_in_brackets("[1.2.3.4]:"));
  CHECK_FALSE(endpoint_in_brackets("[1.2.3.4]:99999"));
  CHECK_FALSE(endpoint_in_brackets("1.2.3.4:80"));
}

TEST_CASE("after an abort every collective throws ViewChanged at once, with the abort's reason") {
  LocalRendezvousStore store(13);
  auto world = make_gloo_world(2, store, patient());
  world[1]->abort("epoch 14 committed");
  world[1]->abort("a second abort is harmless");
  std::vector<int32_t> v(4, 1);
  char c = 0;
  CHECK_THROWS_WITH_AS(world[1]->allreduce(v.data(), v.size(), DataType::i32, ReduceOp::max),
                       doctest::Contains("epoch 14 committed"), shoal::ViewChanged);
  CHECK_THROWS_AS(world[1]->broadcast(&c, 1, 0), shoal::ViewChanged);
  CHECK_THROWS_AS(world[1]->allgather(&c, v.data(), 1), shoal::ViewChanged);
  CHECK_THROWS_AS(world[1]->barrier(), shoal::ViewChanged);
  try {
    world[1]->barrier();
  } catch (const shoal::ViewChanged& e) {
    CHECK(e.epoch() == 13);
  }
}

TEST_CASE("a gloo collective a peer never joins throws Timeout after the op timeout, then ViewChanged") {
  LocalRendezvousStore store(15);
  GlooOptions o = patient();
  o.collective_timeout = 300ms;
  auto world = make_gloo_world(2, store, o);
  std::vector<double> v(16, 2.0);
  const auto started = Clock::now();
  CHECK_THROWS_AS(world[0]->allreduce(v.data(), v.size(), DataType::f64, ReduceOp::sum), shoal::Timeout);
  CHECK(ms_between(started, Clock::now()) < 5000.0);
  CHECK(world[0]->aborted());
  CHECK_THROWS_AS(world[0]->barrier(), shoal::ViewChanged);
}

TEST_CASE("connecting while a peer never arrives throws Timeout naming the rendezvous keys still missing") {
  LocalRendezvousStore store(16);
  GlooOptions o;
  o.rank = 0;
  o.world_size = 2;
  o.epoch = 16;
  o.rendezvous_timeout = 300ms;
  try {
    (void)shoal::comm::make_gloo_communicator(o, store);
    FAIL("connected without the peer");
  } catch (const shoal::Timeout& e) {
    CHECK(std::string(e.what()).find("gloo/") != std::string::npos);
  }
}

TEST_CASE("superseding the store while ranks connect makes them throw ViewChanged at once") {
  LocalRendezvousStore store(17);
  GlooOptions o = patient();
  o.world_size = 3;
  o.epoch = 17;
  std::thread superseder([&] {
    std::this_thread::sleep_for(200ms);
    store.supersede("epoch 18 committed");
  });
  const auto started = Clock::now();
  const auto errors = on_every_rank(2, [&](int r) {
    auto mine = o;
    mine.rank = r;
    (void)shoal::comm::make_gloo_communicator(mine, store);
  });
  superseder.join();
  for (const auto& e : errors) CHECK(is<shoal::ViewChanged>(e));
  CHECK(ms_between(started, Clock::now()) < 2000.0);
}

TEST_CASE("gloo options outside the world are refused") {
  LocalRendezvousStore store(18);
  GlooOptions o;
  o.rank = 2;
  o.world_size = 2;
  CHECK_THROWS_AS(shoal::comm::make_gloo_communicator(o, store), shoal::Error);
}

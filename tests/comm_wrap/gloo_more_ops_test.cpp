// The operations added for sharded training and pipelines (reduce_scatter, all_to_all, gather, scatter,
// send/recv) and submitted work, on 4 Gloo ranks (threads of one process, loopback TCP): exact results,
// submission order, and a view change that fails the work in flight and every later one.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <thread>
#include <vector>

#include "gloo_world.hpp"
#include "shoal/errors.hpp"

using namespace std::chrono_literals;
using shoal::comm::Communicator;
using shoal::comm::DataType;
using shoal::comm::LocalRendezvousStore;
using shoal::comm::ReduceOp;
using shoal::testing::make_gloo_world;
using shoal::testing::on_every_rank;

namespace {

constexpr int kRanks = 4;

std::vector<std::shared_ptr<Communicator>> shared_world(LocalRendezvousStore& store,
                                                        shoal::comm::GlooOptions options = {}) {
  auto world = make_gloo_world(kRanks, store, options);
  std::vector<std::shared_ptr<Communicator>> out;
  for (auto& c : world) out.push_back(std::shared_ptr<Communicator>(std::move(c)));
  return out;
}

void require_no_errors(const std::vector<std::exception_ptr>& errors) {
  for (const auto& e : errors) {
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        FAIL(x.what());
      }
    }
  }
}

}  // namespace

TEST_CASE("reduce_scatter leaves each rank its block of the sum, the average, the minimum and the maximum") {
  LocalRendezvousStore store(1);
  auto world = make_gloo_world(kRanks, store);
  constexpr size_t count = 1000;  // per rank
  for (const auto op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::min, ReduceOp::max}) {
    CAPTURE(shoal::comm::to_string(op));
    std::vector<std::vector<int64_t>> in(kRanks), out(kRanks, std::vector<int64_t>(count, -1));
    for (int r = 0; r < kRanks; ++r) {
      for (size_t i = 0; i < count * kRanks; ++i) in[size_t(r)].push_back(int64_t(i % 13) * (r + 1) - r);
    }
    require_no_errors(on_every_rank(kRanks, [&](int r) {
      world[size_t(r)]->reduce_scatter(in[size_t(r)].data(), out[size_t(r)].data(), count, DataType::i64, op);
    }));
    size_t wrong = 0;
    for (int r = 0; r < kRanks; ++r) {
      for (size_t i = 0; i < count; ++i) {
        const size_t at = size_t(r) * count + i;
        int64_t sum = 0, lo = INT64_MAX, hi = INT64_MIN;
        for (int s = 0; s < kRanks; ++s) {
          const int64_t v = in[size_t(s)][at];
          sum += v;
          lo = std::min(lo, v);
          hi = std::max(hi, v);
        }
        const int64_t want = op == ReduceOp::sum ? sum : op == ReduceOp::avg ? sum / kRanks : op == ReduceOp::min ? lo : hi;
        wrong += out[size_t(r)][i] != want ? 1 : 0;
      }
    }
    CHECK(wrong == 0);
  }
}

TEST_CASE("all_to_all sends block p of each rank to rank p, in rank order") {
  LocalRendezvousStore store(1);
  auto world = make_gloo_world(kRanks, store);
  constexpr size_t block = 3;  // int32 elements per rank pair
  std::vector<std::vector<int32_t>> in(kRanks), out(kRanks, std::vector<int32_t>(block * kRanks, -1));
  for (int r = 0; r < kRanks; ++r) {
    for (int p = 0; p < kRanks; ++p) {
      for (size_t k = 0; k < block; ++k) in[size_t(r)].push_back(r * 100 + p * 10 + int(k));
    }
  }
  require_no_errors(on_every_rank(kRanks, [&](int r) {
    world[size_t(r)]->all_to_all(in[size_t(r)].data(), out[size_t(r)].data(), block * sizeof(int32_t));
  }));
  for (int r = 0; r < kRanks; ++r) {
    for (int p = 0; p < kRanks; ++p) {
      for (size_t k = 0; k < block; ++k) CHECK(out[size_t(r)][size_t(p) * block + k] == p * 100 + r * 10 + int(k));
    }
  }
}

TEST_CASE("gather collects every rank's bytes at a non-zero root; scatter hands block r to rank r") {
  LocalRendezvousStore store(1);
  auto world = make_gloo_world(kRanks, store);
  constexpr int root = 2;
  std::vector<std::vector<char>> mine(kRanks);
  for (int r = 0; r < kRanks; ++r) mine[size_t(r)] = {char('a' + r), char('A' + r)};
  std::vector<char> gathered(2 * kRanks, '?');
  require_no_errors(on_every_rank(kRanks, [&](int r) {
    world[size_t(r)]->gather(mine[size_t(r)].data(), r == root ? gathered.data() : nullptr, 2, root);
  }));
  CHECK(std::string(gathered.begin(), gathered.end()) == "aAbBcCdD");

  const std::string blocks = "0123456789ab";  // 3 bytes for each rank
  std::vector<std::vector<char>> got(kRanks, std::vector<char>(3, '?'));
  require_no_errors(on_every_rank(kRanks, [&](int r) {
    world[size_t(r)]->scatter(r == root ? blocks.data() : nullptr, got[size_t(r)].data(), 3, root);
  }));
  for (int r = 0; r < kRanks; ++r) CHECK(std::string(got[size_t(r)].begin(), got[size_t(r)].end()) == blocks.substr(size_t(r) * 3, 3));
}

TEST_CASE("two ranks that each send to the other before receiving do not wait on each other") {
  LocalRendezvousStore store(1);
  auto world = shared_world(store);
  // A ring: every rank sends to the next and receives from the previous, all posted before any wait.
  std::vector<std::vector<int64_t>> sent(kRanks), got(kRanks, std::vector<int64_t>(1000, -1));
  for (int r = 0; r < kRanks; ++r) sent[size_t(r)].assign(1000, r * 7 + 1);
  require_no_errors(on_every_rank(kRanks, [&](int r) {
    auto& c = *world[size_t(r)];
    const int next = (r + 1) % kRanks, prev = (r + kRanks - 1) % kRanks;
    auto s = c.send_async(sent[size_t(r)].data(), 8000, next, 5);
    auto v = c.recv_async(got[size_t(r)].data(), 8000, prev, 5);
    REQUIRE(s->wait_for(10s));
    REQUIRE(v->wait_for(10s));
  }));
  for (int r = 0; r < kRanks; ++r) CHECK(got[size_t(r)][999] == ((r + kRanks - 1) % kRanks) * 7 + 1);

  // The blocking forms, ordered so that they pair up: even ranks send first.
  std::vector<int32_t> back(kRanks, -1);
  require_no_errors(on_every_rank(kRanks, [&](int r) {
    auto& c = *world[size_t(r)];
    const int peer = r ^ 1;
    int32_t mine = 40 + r;
    if (r % 2 == 0) {
      c.send(&mine, sizeof mine, peer, 1);
      c.recv(&back[size_t(r)], sizeof mine, peer, 1);
    } else {
      c.recv(&back[size_t(r)], sizeof mine, peer, 1);
      c.send(&mine, sizeof mine, peer, 1);
    }
  }));
  for (int r = 0; r < kRanks; ++r) CHECK(back[size_t(r)] == 40 + (r ^ 1));
}

TEST_CASE("submitted collectives run in submission order and complete their Work, callbacks included") {
  LocalRendezvousStore store(1);
  auto world = shared_world(store);
  constexpr int kOps = 20;
  std::vector<std::vector<std::vector<float>>> bufs(kRanks, std::vector<std::vector<float>>(kOps));
  std::atomic<int> callbacks{0};
  require_no_errors(on_every_rank(kRanks, [&](int r) {
    std::vector<std::shared_ptr<shoal::Work>> works;
    for (int k = 0; k < kOps; ++k) {
      // Sizes differ by op: a mismatched order across ranks would fail or give wrong sums.
      bufs[size_t(r)][size_t(k)].assign(size_t(100 + 37 * k), float(r + k));
      auto& b = bufs[size_t(r)][size_t(k)];
      works.push_back(world[size_t(r)]->allreduce_async(b.data(), b.size(), DataType::f32, ReduceOp::sum));
      works.back()->on_done([&](std::exception_ptr e) {
        if (!e) callbacks.fetch_add(1);
      });
    }
    for (auto& w : works) w->wait();
    for (auto& w : works) CHECK(w->done());
  }));
  CHECK(callbacks.load() == kRanks * kOps);
  for (int r = 0; r < kRanks; ++r) {
    for (int k = 0; k < kOps; ++k) CHECK(bufs[size_t(r)][size_t(k)].back() == float(0 + 1 + 2 + 3 + 4 * k));
  }
}

TEST_CASE("an abort fails the submitted collective in flight and every later one with ViewChanged, at once") {
  LocalRendezvousStore store(1);
  shoal::comm::GlooOptions options;
  options.collective_timeout = 30s;
  auto world = shared_world(store, options);
  // Rank 3 never joins: ranks 0-2 block in their first allreduce until the abort.
  std::vector<std::vector<float>> bufs(kRanks, std::vector<float>(64, 1.0f));
  std::vector<std::shared_ptr<shoal::Work>> first, second;
  for (int r = 0; r < 3; ++r) {
    first.push_back(world[size_t(r)]->allreduce_async(bufs[size_t(r)].data(), 64, DataType::f32, ReduceOp::sum));
    second.push_back(world[size_t(r)]->barrier_async());
  }
  std::this_thread::sleep_for(100ms);
  for (auto& w : first) CHECK_FALSE(w->done());
  const auto started = std::chrono::steady_clock::now();
  for (int r = 0; r < 3; ++r) world[size_t(r)]->abort("a member left");
  for (int r = 0; r < 3; ++r) {
    CHECK_THROWS_AS(first[size_t(r)]->wait(), shoal::ViewChanged);
    CHECK_THROWS_AS(second[size_t(r)]->wait(), shoal::ViewChanged);
    CHECK(first[size_t(r)]->error() != nullptr);
  }
  CHECK(std::chrono::steady_clock::now() - started < 2s);
  // Work submitted after the abort fails too, and its callback still runs.
  std::atomic<bool> told{false};
  auto late = world[0]->barrier_async();
  late->on_done([&](std::exception_ptr e) { told = e != nullptr; });
  CHECK_THROWS_AS(late->wait(), shoal::ViewChanged);
  CHECK(told.load());
}

TEST_CASE("submit refuses a communicator that no shared_ptr owns") {
  LocalRendezvousStore store(1);
  auto world = make_gloo_world(1, store);
  CHECK_THROWS_AS(world[0]->barrier_async(), shoal::Error);
  world[0]->barrier();  // the blocking form still works
}

TEST_CASE("allreduce_in_place reduces in the buffer itself and lets go of its owner once Gloo is done") {
  LocalRendezvousStore store(1);
  auto world = shared_world(store);
  std::vector<std::shared_ptr<std::vector<float>>> owners;
  std::vector<std::weak_ptr<std::vector<float>>> watch;
  for (int r = 0; r < kRanks; ++r) {
    owners.push_back(std::make_shared<std::vector<float>>(1000, float(r + 1)));
    watch.push_back(owners.back());
  }
  require_no_errors(on_every_rank(kRanks, [&](int r) {
    auto& buf = *owners[size_t(r)];
    world[size_t(r)]->allreduce_in_place(buf.data(), buf.size(), DataType::f32, ReduceOp::avg, owners[size_t(r)]);
  }));
  for (int r = 0; r < kRanks; ++r) CHECK((*owners[size_t(r)])[999] == 2.5f);
  owners.clear();
  for (auto& w : watch) CHECK(w.expired());  // nothing kept it after the call

  // Rank 3 never joins; after the abort the submitted work fails at once, and the owner is released once
  // Gloo's worker has returned (its sockets shut), not before.
  std::vector<std::shared_ptr<shoal::Work>> works;
  std::vector<std::weak_ptr<std::vector<float>>> pending;
  for (int r = 0; r < 3; ++r) {
    auto owner = std::make_shared<std::vector<float>>(1 << 16, 1.0f);
    pending.push_back(owner);
    auto* data = owner->data();
    works.push_back(world[size_t(r)]->submit([data, owner](Communicator& c) {
      c.allreduce_in_place(data, 1 << 16, DataType::f32, ReduceOp::sum, owner);
    }));
  }
  std::this_thread::sleep_for(100ms);
  for (int r = 0; r < 3; ++r) world[size_t(r)]->abort("a member left");
  for (auto& w : works) CHECK_THROWS_AS(w->wait(), shoal::ViewChanged);
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline &&
         std::any_of(pending.begin(), pending.end(), [](const auto& p) { return !p.expired(); })) {
    std::this_thread::sleep_for(10ms);
  }
  for (auto& p : pending) CHECK(p.expired());
}

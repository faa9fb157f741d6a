// The bootstrap tree (comm_wrap/bootstrap_tree.hpp): routes as a table; over job sizes up to 25,000 nodes the
// tree reaches every node from node 0 without a cycle, no node serves more than `fanout` others, and the depth
// is logarithmic; and ranks as threads over one store per node (the agents) all get rank 0's value, each store
// read by at most fanout + its own node's other ranks. With NCCL built in, the unique id goes the same way.
#include "comm_wrap/bootstrap_tree.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <map>
#include <memory>
#include <vector>

#include "comm_wrap/stores/local_rendezvous_store.hpp"
#if defined(SHOAL_HAVE_NCCL)
#include <cstring>

#include "comm_wrap/nccl/unique_id.hpp"
#endif

using namespace std::chrono_literals;
using shoal::comm::bootstrap_depth;
using shoal::comm::bootstrap_parent;
using shoal::comm::bootstrap_route;
using shoal::comm::BootstrapRoute;

namespace {

// A node's agent store that counts what it serves.
class CountingStore final : public shoal::comm::RendezvousStore {
 public:
  CountingStore() : inner_(9) {}
  uint64_t epoch() const override { return 9; }
  void set(const std::string& key, const shoal::comm::Bytes& value) override {
    ++sets;
    inner_.set(key, value);
  }
  std::vector<shoal::comm::Bytes> multi_get(const std::vector<std::string>& keys,
                                            std::chrono::milliseconds timeout) override {
    ++gets;
    return inner_.multi_get(keys, timeout);
  }
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    inner_.wait(keys, timeout);
  }
  std::atomic<int> gets{0}, sets{0};

 private:
  shoal::comm::LocalRendezvousStore inner_;
};

}  // namespace

TEST_CASE("each rank's route: rank 0 makes, a node's first rank reads from its parent, the others from their own") {
  struct Row {
    uint32_t node, local, count, fanout;
    BootstrapRoute route;
  };
  const Row rows[] = {
      {0, 0, 1, 16, {true, std::nullopt, 0}},
      {0, 3, 1, 16, {false, 0, std::nullopt}},
      {1, 0, 4, 16, {false, 0, 1}},
      {16, 0, 40, 16, {false, 0, 16}},
      {17, 0, 40, 16, {false, 1, 17}},
      {33, 0, 40, 16, {false, 2, 33}},
      {33, 7, 40, 16, {false, 33, std::nullopt}},
      {5, 0, 9, 2, {false, 2, 5}},
      {4, 0, 4, 16, {false, std::nullopt, std::nullopt}},  // no such node: nothing
  };
  for (const Row& r : rows) {
    INFO("node " << r.node << " local " << r.local << " of " << r.count << " fanout " << r.fanout);
    CHECK(bootstrap_route(r.node, r.local, r.count, r.fanout) == r.route);
  }
  CHECK(bootstrap_depth(0) == 0);
  CHECK(bootstrap_depth(1) == 0);
  CHECK(bootstrap_depth(17) == 1);
  CHECK(bootstrap_depth(18) == 2);
  CHECK(bootstrap_depth(25000) == 4);
  CHECK(bootstrap_depth(100000) == 5);
  CHECK(bootstrap_depth(10, 1) == 9);  // a chain
}

TEST_CASE("the tree reaches every node from node 0, acyclic, no node serving more than fanout others") {
  for (uint32_t count : {1u, 2u, 16u, 17u, 300u, 10000u, 25000u}) {
    for (uint32_t fanout : {1u, 4u, 16u}) {
      if (fanout == 1 && count > 300) continue;  // a chain of 10,000 proves nothing more
      INFO(count << " nodes, fanout " << fanout);
      std::vector<uint32_t> children(count, 0);
      uint32_t deepest = 0;
      bool ok = true;
      for (uint32_t n = 1; n < count; ++n) {
        const uint32_t parent = bootstrap_parent(n, fanout);
        ok = ok && parent < n;  // parents come first: no cycle, and node 0 is every node's ancestor
        ++children[parent];
        uint32_t hops = 0;
        for (uint32_t m = n; m != 0; m = bootstrap_parent(m, fanout)) ++hops;
        deepest = std::max(deepest, hops);
      }
      CHECK(ok);
      CHECK(*std::max_element(children.begin(), children.end()) <= fanout);
      CHECK(deepest == bootstrap_depth(count, fanout));
    }
  }
}

TEST_CASE("ranks as threads over one store per node all get rank 0's value; each store serves a bounded few") {
  constexpr uint32_t kNodes = 40, kLocal = 3, kFanout = 4;
  std::vector<std::unique_ptr<CountingStore>> stores;
  for (uint32_t n = 0; n < kNodes; ++n) stores.push_back(std::make_unique<CountingStore>());
  const shoal::comm::StoreAt store_at = [&](uint32_t n) -> shoal::comm::RendezvousStore& { return *stores.at(n); };
  const shoal::comm::Bytes value = {1, 2, 3};
  std::vector<std::future<shoal::comm::Bytes>> ranks;
  // The farthest ranks start first: they wait for their ancestors.
  for (uint32_t n = kNodes; n-- > 0;) {
    for (uint32_t l = 0; l < kLocal; ++l) {
      ranks.push_back(std::async(std::launch::async, [&, n, l] {
        return shoal::comm::share_bootstrap_value(
            bootstrap_route(n, l, kNodes, kFanout), "k", [&] { return value; }, store_at, 10s);
      }));
    }
  }
  for (auto& r : ranks) CHECK(r.get() == value);
  for (uint32_t n = 0; n < kNodes; ++n) {
    INFO("node " << n);
    CHECK(stores[n]->sets == 1);
    CHECK(stores[n]->gets <= static_cast<int>(kFanout + kLocal - 1));
  }
}

#if defined(SHOAL_HAVE_NCCL)
TEST_CASE("the NCCL unique id along the tree: every rank of every node gets rank 0's id") {
  constexpr uint32_t kNodes = 20, kLocal = 2;
  std::vector<std::unique_ptr<CountingStore>> stores;
  for (uint32_t n = 0; n < kNodes; ++n) stores.push_back(std::make_unique<CountingStore>());
  const shoal::comm::StoreAt store_at = [&](uint32_t n) -> shoal::comm::RendezvousStore& { return *stores.at(n); };
  std::vector<std::future<ncclUniqueId>> ranks;
  for (uint32_t n = kNodes; n-- > 0;) {
    for (uint32_t l = 0; l < kLocal; ++l) {
      ranks.push_back(std::async(std::launch::async, [&, n, l] {
        return shoal::comm::exchange_unique_id(bootstrap_route(n, l, kNodes), store_at, 10s);
      }));
    }
  }
  std::vector<ncclUniqueId> ids;
  for (auto& r : ranks) ids.push_back(r.get());
  for (const auto& id : ids) CHECK(std::memcmp(id.internal, ids.back().internal, sizeof(id.internal)) == 0);
  CHECK(stores[0]->gets <= static_cast<int>(shoal::comm::kBootstrapFanout + kLocal - 1));
}
#endif

// The NCCL unique id exchange, which needs no GPU: rank 0 publishes, every other rank reads the same
// 128 bytes from the epoch's store; a superseded epoch fails at once; a missing rank 0 times out.
#include <doctest/doctest.h>

#include <cstring>
#include <future>
#include <vector>

#include "comm_wrap/nccl/unique_id.hpp"
#include "comm_wrap/stores/local_rendezvous_store.hpp"
#include "shoal/errors.hpp"

using namespace std::chrono_literals;
using shoal::comm::LocalRendezvousStore;

TEST_CASE("every rank of an epoch gets rank 0's unique id, whichever arrives first") {
  LocalRendezvousStore store(7);
  std::vector<std::future<ncclUniqueId>> ranks;
  for (int r = 3; r >= 0; --r) {  // readers first: they must wait for rank 0
    ranks.push_back(
        std::async(std::launch::async, [&store, r] { return shoal::comm::exchange_unique_id(r, store, 5s); }));
  }
  const ncclUniqueId from0 = ranks.back().get();
  for (size_t i = 0; i + 1 < ranks.size(); ++i) {
    const ncclUniqueId got = ranks[i].get();
    CHECK(std::memcmp(got.internal, from0.internal, sizeof(from0.internal)) == 0);
  }
}

TEST_CASE("a unique id wait on a superseded epoch fails with ViewChanged, a lost rank 0 with Timeout") {
  LocalRendezvousStore store(3);
  auto waiter = std::async(std::launch::async, [&] { return shoal::comm::exchange_unique_id(1, store, 30s); });
  std::this_thread::sleep_for(50ms);
  store.supersede("epoch 4 was committed");
  CHECK_THROWS_AS(waiter.get(), shoal::ViewChanged);

  LocalRendezvousStore lonely(5);
  CHECK_THROWS_AS(shoal::comm::exchange_unique_id(2, lonely, 100ms), shoal::Timeout);
}

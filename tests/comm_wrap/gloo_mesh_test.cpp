// How the Gloo backend connects its full mesh (comm_wrap/gloo/mesh_connect): every rank reads the store
// once (Gloo's own connect read once per lower rank and waited once per peer, each a round trip to the
// store host on a rebuild's critical path), the mesh works, a rank that connects with Gloo's own
// connectFullMesh (an older shoal in the same job) still meets the others, and the side that opens each
// pair's connection is predicted as Gloo decides it.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/address.h>
#include <gloo/transport/tcp/device.h>
#include <netinet/in.h>

#include <atomic>
#include <cstring>
#include <vector>

#include "comm_wrap/gloo/mesh_connect.hpp"
#include "comm_wrap/gloo/store_adapter.hpp"
#include "gloo_world.hpp"

using namespace std::chrono_literals;
using shoal::comm::Bytes;
using shoal::comm::LocalRendezvousStore;
using shoal::comm::RendezvousStore;
using shoal::testing::on_every_rank;

namespace {

// One rank's view of the shared store, counting what that rank asks of it.
class CountingStore final : public RendezvousStore {
 public:
  explicit CountingStore(RendezvousStore& inner) : inner_(inner) {}
  uint64_t epoch() const override { return inner_.epoch(); }
  void set(const std::string& key, const Bytes& value) override {
    ++sets;
    inner_.set(key, value);
  }
  std::vector<Bytes> multi_get(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    ++reads;
    return inner_.multi_get(keys, timeout);
  }
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    ++waits;
    inner_.wait(keys, timeout);
  }
  std::atomic<int> sets{0}, reads{0}, waits{0};

 private:
  RendezvousStore& inner_;
};

std::vector<char> v4(const char* ip, uint16_t port) {
  sockaddr_storage ss{};
  auto& in = reinterpret_cast<sockaddr_in&>(ss);
  in.sin_family = AF_INET;
  in.sin_port = htons(port);
  REQUIRE(inet_pton(AF_INET, ip, &in.sin_addr) == 1);
  return gloo::transport::tcp::Address(ss).bytes();
}

std::vector<char> v6(const char* ip, uint16_t port) {
  sockaddr_storage ss{};
  auto& in = reinterpret_cast<sockaddr_in6&>(ss);
  in.sin6_family = AF_INET6;
  in.sin6_port = htons(port);
  REQUIRE(inet_pton(AF_INET6, ip, &in.sin6_addr) == 1);
  return gloo::transport::tcp::Address(ss).bytes();
}

}  // namespace

TEST_CASE("every rank connects the mesh with one read of the store, and the mesh works") {
  constexpr int kRanks = 6;
  LocalRendezvousStore shared(3);
  std::vector<std::unique_ptr<CountingStore>> views;
  for (int r = 0; r < kRanks; ++r) views.push_back(std::make_unique<CountingStore>(shared));
  std::vector<std::unique_ptr<shoal::comm::Communicator>> world(kRanks);
  const auto built = on_every_rank(kRanks, [&](int r) {
    shoal::comm::GlooOptions o;
    o.rank = r;
    o.world_size = kRanks;
    o.epoch = 3;
    o.rendezvous_timeout = 10s;
    world[size_t(r)] = shoal::comm::make_gloo_communicator(o, *views[size_t(r)]);
  });
  for (const auto& e : built) REQUIRE_FALSE(e);
  for (int r = 0; r < kRanks; ++r) {
    CAPTURE(r);
    CHECK(views[size_t(r)]->sets.load() == 2);  // its addresses, and its host name for an older Gloo connect
    CHECK(views[size_t(r)]->reads.load() == 1);
    CHECK(views[size_t(r)]->waits.load() == 0);
  }
  std::vector<int64_t> sums(kRanks);
  const auto reduced = on_every_rank(kRanks, [&](int r) {
    int64_t v = r + 1;
    world[size_t(r)]->allreduce(&v, 1, shoal::comm::DataType::i64, shoal::comm::ReduceOp::sum);
    sums[size_t(r)] = v;
  });
  for (const auto& e : reduced) REQUIRE_FALSE(e);
  for (const auto s : sums) CHECK(s == kRanks * (kRanks + 1) / 2);
}

TEST_CASE("a rank that connects with Gloo's own connectFullMesh meets ranks that connect the new way") {
  constexpr int kRanks = 4;
  LocalRendezvousStore shared(5);
  std::vector<std::unique_ptr<shoal::comm::Communicator>> world(kRanks);
  std::shared_ptr<gloo::rendezvous::Context> older;
  const auto built = on_every_rank(kRanks, [&](int r) {
    if (r == 2) {
      shoal::comm::GlooStoreAdapter adapter(shared, "gloo/", 10s);
      gloo::transport::tcp::attr attr;
      attr.hostname = "127.0.0.1";
      auto device = gloo::transport::tcp::CreateDevice(attr);
      older = std::make_shared<gloo::rendezvous::Context>(r, kRanks);
      older->setTimeout(2s);
      older->connectFullMesh(adapter, device);
      return;
    }
    shoal::comm::GlooOptions o;
    o.rank = r;
    o.world_size = kRanks;
    o.epoch = 5;
    o.rendezvous_timeout = 10s;
    world[size_t(r)] = shoal::comm::make_gloo_communicator(o, shared);
  });
  for (const auto& e : built) REQUIRE_FALSE(e);
  REQUIRE(older);
  for (int i = 0; i < kRanks; ++i) {
    if (i != 2) CHECK(older->getPair(i) != nullptr);
  }
}

TEST_CASE("the side that opens a pair's connection is the one Gloo picks: address bytes, then the raw port") {
  using shoal::comm::gloo_initiates;
  // Exactly one side of a pair opens it.
  const auto a = v4("127.0.0.1", 1000);
  const auto b = v4("127.0.0.1", 2000);
  REQUIRE(gloo_initiates(a, b).has_value());
  CHECK(*gloo_initiates(a, b) != *gloo_initiates(b, a));
  // Gloo subtracts the ports as stored, in network byte order: 1000 is 0xe803 there, 2000 is 0xd007,
  // so the side on port 1000 compares greater and connects, although 1000 < 2000.
  CHECK(*gloo_initiates(a, b));
  // The address decides before the port does.
  CHECK(*gloo_initiates(v4("127.0.0.2", 1), v4("127.0.0.1", 65535)));
  CHECK_FALSE(*gloo_initiates(v4("10.0.0.1", 65535), v4("127.0.0.1", 1)));
  CHECK(*gloo_initiates(v6("::2", 7), v6("::1", 9)));
  // No order between an address and itself, or across families: the caller then keeps Gloo's order.
  CHECK_FALSE(gloo_initiates(a, a).has_value());
  CHECK_FALSE(gloo_initiates(a, v6("::1", 1000)).has_value());
}

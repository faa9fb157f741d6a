// The Gloo backend's collectives on 4 ranks (threads of one process, loopback TCP): exact results for
// every CPU type and reduction, broadcast from a non-zero root, allgather in rank order, barrier.
#include <dirent.h>
#include <doctest/doctest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "base/tcp_backoff.hpp"
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

// Small integers (negative ones too), exact in every type, so float results can be compared exactly.
template <class T>
T input(int rank, size_t i) {
  return static_cast<T>((rank + 1) * int(i % 7 + 1) - 3 * rank - 5);
}

template <class T>
T expected(ReduceOp op, size_t i) {
  T acc = input<T>(0, i);
  for (int r = 1; r < kRanks; ++r) {
    const T v = input<T>(r, i);
    switch (op) {
      case ReduceOp::sum:
      case ReduceOp::avg:
        acc = static_cast<T>(acc + v);
        break;
      case ReduceOp::min:
        acc = std::min(acc, v);
        break;
      case ReduceOp::max:
        acc = std::max(acc, v);
        break;
    }
  }
  if (op == ReduceOp::avg) acc = static_cast<T>(acc / static_cast<T>(kRanks));
  return acc;
}

template <class T>
void check_allreduce(std::vector<std::unique_ptr<Communicator>>& world, DataType type, ReduceOp op, size_t count) {
  CAPTURE(shoal::comm::to_string(type));
  CAPTURE(shoal::comm::to_string(op));
  CAPTURE(count);
  std::vector<std::vector<T>> data(kRanks, std::vector<T>(count));
  for (int r = 0; r < kRanks; ++r) {
    for (size_t i = 0; i < count; ++i) data[size_t(r)][i] = input<T>(r, i);
  }
  const auto errors =
      on_every_rank(kRanks, [&](int r) { world[size_t(r)]->allreduce(data[size_t(r)].data(), count, type, op); });
  for (const auto& e : errors) REQUIRE_FALSE(e);
  size_t wrong = 0;
  for (int r = 0; r < kRanks; ++r) {
    for (size_t i = 0; i < count; ++i) wrong += data[size_t(r)][i] != expected<T>(op, i) ? 1 : 0;
  }
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("gloo allreduce over 4 ranks gives exact sum, average, minimum and maximum for every CPU type") {
  LocalRendezvousStore store(1);
  auto world = make_gloo_world(kRanks, store);
  for (const ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::min, ReduceOp::max}) {
    check_allreduce<float>(world, DataType::f32, op, 1000);
    check_allreduce<double>(world, DataType::f64, op, 1000);
    check_allreduce<int32_t>(world, DataType::i32, op, 1000);
    check_allreduce<int64_t>(world, DataType::i64, op, 1000);
  }
}

TEST_CASE("gloo allreduce of a buffer larger than one segment is exact") {
  LocalRendezvousStore store(1);
  auto world = make_gloo_world(kRanks, store);
  check_allreduce<double>(world, DataType::f64, ReduceOp::sum, 3 * 1024 * 1024 / sizeof(double) + 13);
}

TEST_CASE("gloo refuses bf16 and f16 allreduce with an error that names the type") {
  LocalRendezvousStore store(1);
  auto world = make_gloo_world(1, store);
  std::vector<uint16_t> buf(8);
  CHECK_THROWS_WITH_AS(world[0]->allreduce(buf.data(), buf.size(), DataType::bf16, ReduceOp::sum),
                       doctest::Contains("bf16"), shoal::Error);
  CHECK_THROWS_WITH_AS(world[0]->allreduce(buf.data(), buf.size(), DataType::f16, ReduceOp::sum),
                       doctest::Contains("f16"), shoal::Error);
  CHECK_FALSE(world[0]->aborted());
}

TEST_CASE("gloo broadcast from a non-zero root copies the root's bytes to every rank") {
  LocalRendezvousStore store(2);
  auto world = make_gloo_world(kRanks, store);
  constexpr size_t kBytes = 100003;
  constexpr int kRoot = 2;
  std::vector<std::vector<char>> bufs(kRanks, std::vector<char>(kBytes));
  for (int r = 0; r < kRanks; ++r) {
    for (size_t i = 0; i < kBytes; ++i) bufs[size_t(r)][i] = char((i * 31 + size_t(r) * 7) & 0x7f);
  }
  const auto root_bytes = bufs[kRoot];
  const auto errors =
      on_every_rank(kRanks, [&](int r) { world[size_t(r)]->broadcast(bufs[size_t(r)].data(), kBytes, kRoot); });
  for (const auto& e : errors) REQUIRE_FALSE(e);
  for (int r = 0; r < kRanks; ++r) CHECK(bufs[size_t(r)] == root_bytes);
}

TEST_CASE("gloo broadcast refuses a root outside the world") {
  LocalRendezvousStore store(2);
  auto world = make_gloo_world(1, store);
  char c = 0;
  CHECK_THROWS_AS(world[0]->broadcast(&c, 1, 1), shoal::Error);
}

TEST_CASE("gloo allgather places every rank's bytes in rank order") {
  LocalRendezvousStore store(3);
  auto world = make_gloo_world(kRanks, store);
  constexpr size_t kPer = 4099;
  std::vector<std::vector<char>> in(kRanks, std::vector<char>(kPer));
  std::vector<std::vector<char>> out(kRanks, std::vector<char>(kPer * kRanks, 0));
  for (int r = 0; r < kRanks; ++r) std::fill(in[size_t(r)].begin(), in[size_t(r)].end(), char('a' + r));
  const auto errors = on_every_rank(
      kRanks, [&](int r) { world[size_t(r)]->allgather(in[size_t(r)].data(), out[size_t(r)].data(), kPer); });
  for (const auto& e : errors) REQUIRE_FALSE(e);
  std::vector<char> expect;
  for (int r = 0; r < kRanks; ++r) expect.insert(expect.end(), in[size_t(r)].begin(), in[size_t(r)].end());
  for (int r = 0; r < kRanks; ++r) CHECK(out[size_t(r)] == expect);
}

TEST_CASE("gloo barrier releases no rank before the last one arrives") {
  LocalRendezvousStore store(4);
  auto world = make_gloo_world(kRanks, store);
  std::vector<std::chrono::steady_clock::time_point> left(kRanks);
  std::chrono::steady_clock::time_point last_arrived;
  const auto errors = on_every_rank(kRanks, [&](int r) {
    if (r == kRanks - 1) {
      std::this_thread::sleep_for(300ms);
      last_arrived = std::chrono::steady_clock::now();
    }
    world[size_t(r)]->barrier();
    left[size_t(r)] = std::chrono::steady_clock::now();
  });
  for (const auto& e : errors) REQUIRE_FALSE(e);
  for (int r = 0; r < kRanks; ++r) CHECK(left[size_t(r)] >= last_arrived);
}

TEST_CASE("a world of one rank reduces, broadcasts and gathers locally") {
  LocalRendezvousStore store(5);
  auto world = make_gloo_world(1, store);
  std::vector<float> v = {1.5f, -2.0f};
  world[0]->allreduce(v.data(), v.size(), DataType::f32, ReduceOp::avg);
  CHECK(v == std::vector<float>{1.5f, -2.0f});
  char in[3] = {'x', 'y', 'z'}, out[3] = {};
  world[0]->allgather(in, out, 3);
  CHECK(std::memcmp(in, out, 3) == 0);
  world[0]->broadcast(in, 3, 0);
  world[0]->barrier();
  CHECK(world[0]->world_size() == 1);
  CHECK(std::string(world[0]->backend()) == "gloo");
}

TEST_CASE("every pair socket of a gloo world carries the 1 s retransmission backoff cap and keepalive") {
  int probe = ::socket(AF_INET, SOCK_STREAM, 0);
  const bool supported = shoal::net::retransmission_backoff_ms(probe) >= 0;
  ::close(probe);
  if (!supported) {
    MESSAGE("skipped: this kernel has no TCP_RTO_MAX_MS (Linux 6.15+)");
    return;
  }
  // Every connected socket of this process by inode, and whether it carries the cap and keepalive.
  // By inode, so that sockets of earlier worlds closing meanwhile do not change the count.
  const auto connected_sockets = [] {
    std::map<std::string, bool> capped;
    DIR* dir = ::opendir("/proc/self/fd");
    REQUIRE(dir != nullptr);
    while (const dirent* e = ::readdir(dir)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      char target[64] = {};
      const std::string link = std::string("/proc/self/fd/") + e->d_name;
      if (::readlink(link.c_str(), target, sizeof(target) - 1) <= 0 || std::strncmp(target, "socket:[", 8) != 0)
        continue;
      sockaddr_storage peer{};
      socklen_t len = sizeof peer;
      const int fd = std::atoi(e->d_name);
      if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) continue;
      int keepalive = 0;
      socklen_t klen = sizeof keepalive;
      capped[target] = shoal::net::retransmission_backoff_ms(fd) == 1000 &&
                       ::getsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &keepalive, &klen) == 0 && keepalive == 1;
    }
    ::closedir(dir);
    return capped;
  };
  const auto before = connected_sockets();
  LocalRendezvousStore store(1);
  auto world = make_gloo_world(kRanks, store);
  size_t fresh = 0, fresh_capped = 0;
  for (const auto& [inode, capped] : connected_sockets()) {
    if (before.count(inode) != 0) continue;
    ++fresh;
    if (capped) ++fresh_capped;
  }
  CHECK(fresh >= size_t(kRanks * (kRanks - 1)));  // both ends of every pair, all in this process
  CHECK(fresh_capped == fresh);
}

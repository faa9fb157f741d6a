// The whole-transfer deadline of a replica push: a sender that trickles one byte every 40 ms -- always
// well inside the per-read stall timeout -- is cut off when the whole transfer's deadline (allowance +
// announced bytes at the floor rate) passes, and the /dev/shm segment reserved for it is removed. The
// same limits let a sender at full speed through. (The deadline is shortened here so that this runs in
// a second; transfer.hpp documents the defaults.)
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

#include "../ckpt_shm/ckpt_pattern.hpp"
#include "../ckpt_shm/shm_test_job.hpp"
#include "../support/tcp_pair.hpp"
#include "ckpt_service/transfer.hpp"
#include "ckpt_shm/replica_store.hpp"
#include "ckpt_shm/version_layout.hpp"

using namespace std::chrono_literals;
using namespace shoal;
using Clock = std::chrono::steady_clock;

namespace {

// A sealed version of job `job`, rank 1, step 5, in page-aligned memory, and its stream.
struct Version {
  std::vector<uint64_t> storage;
  std::span<std::byte> bytes;
  std::vector<std::byte> stream;
  size_t prefix_bytes = 0;

  explicit Version(const std::string& job) {
    const std::vector<ckpt::BufferSpec> buffers = {{"weights", 256 * 1024}};
    const auto plan = ckpt::plan_layout(buffers);
    REQUIRE(plan.ok());
    storage.resize((plan->total_bytes + 2 * ckpt::kDataAlignment) / 8);
    auto* p = reinterpret_cast<std::byte*>(storage.data());
    p += (ckpt::kDataAlignment - reinterpret_cast<uintptr_t>(p) % ckpt::kDataAlignment) % ckpt::kDataAlignment;
    bytes = std::span<std::byte>(p, plan->total_bytes);
    REQUIRE(ckpt::begin_version(bytes, ckpt::VersionIdentity{job, 1, 5, 1, 2}, buffers, *plan).ok());
    ckpt::test::fill_pattern(bytes.subspan(plan->offsets[0], buffers[0].bytes), 5, 0);
    REQUIRE(ckpt::seal_version(bytes).ok());
    const auto info = ckpt::decode_version(bytes, ckpt::DataCheck::skip);
    REQUIRE(info.ok());
    bool first = true;
    for (auto piece : ckpt::stream_pieces(bytes, *info)) {
      stream.insert(stream.end(), piece.begin(), piece.end());
      if (first) prefix_bytes = piece.size(), first = false;
    }
  }
};

struct PushReceipt {
  Result<ckpt::VersionInfo> outcome = fail("not run");
  bool reserved = false;
  Clock::duration took{};
};

// Runs serve_push on the server end of `pair` into a replica store, as the checkpoint service does, and
// drops the receive's reservation when it returns (service.cpp: serve_push_request).
PushReceipt serve_one(int fd, ckpt::ReplicaStore& store, const std::string& job, uint64_t stream_bytes,
                      const ckpt_service::TransferLimits& limits) {
  net::BlockingConn conn(fd);
  wire::CkptRequest request;
  request.set_kind(wire::CkptRequest::PUSH);
  request.set_job(job);
  request.set_rank(1);
  request.set_step(5);
  request.set_stream_bytes(stream_bytes);
  PushReceipt r;
  std::optional<ckpt::Incoming> incoming;
  const auto t0 = Clock::now();
  r.outcome = ckpt_service::serve_push(
      conn, request, [] { return Result<bool>(true); },
      [&](const ckpt::VersionInfo& info) -> Result<std::span<std::byte>> {
        auto in = store.begin(1, 5, info.total_bytes);
        if (!in) return fail("begin refused");
        incoming.emplace(std::move(*in));
        r.reserved = true;
        return incoming->bytes().first(info.total_bytes);
      },
      [&](const ckpt::VersionInfo&) -> Status { return store.complete(std::move(*incoming)); }, limits);
  r.took = Clock::now() - t0;
  incoming.reset();
  return r;
}

ckpt_service::TransferLimits short_whole_deadline() {
  ckpt_service::TransferLimits l;
  l.stall_timeout = 5s;               // never reached by the trickle below
  l.whole_allowance = 600ms;          // ...but this is
  l.floor_bytes_per_s = 64ull << 20;  // 256 KiB in 4 ms
  return l;
}

}  // namespace

TEST_CASE("a push that trickles a byte every 40 ms is cut by the whole-transfer deadline and frees its segment") {
  ckpt::test::ShmTestJob job("loris");
  auto store = ckpt::ReplicaStore::open(ckpt::ReplicaStoreConfig{.job = job.name(), .store = job.name()});
  REQUIRE(store.ok());
  const Version v(job.name());
  test::LoopbackTcpPair pair;
  std::atomic<bool> stop{false};
  std::thread loris([&, fd = pair.release_client()] {
    net::BlockingConn conn(fd);
    auto accepted = conn.read_frame(ckpt_service::kMaxCkptRequestBytes, Clock::now() + 3s);
    if (!accepted) return;
    // The prefix at once (the receiver reserves the segment), then one byte at a time.
    if (!conn.write_data(std::span(v.stream).first(v.prefix_bytes), Clock::now() + 3s)) return;
    for (size_t i = v.prefix_bytes; i < v.stream.size() && !stop; ++i) {
      std::this_thread::sleep_for(40ms);
      if (!conn.write_data(std::span(v.stream).subspan(i, 1), Clock::now() + 1s)) return;
    }
  });
  const auto r = serve_one(pair.release_server(), *store, job.name(), v.stream.size(), short_whole_deadline());
  stop = true;
  loris.join();
  CHECK(r.reserved);
  REQUIRE_FALSE(r.outcome.ok());
  CHECK(r.outcome.error().message.find("deadline") != std::string::npos);
  CHECK(r.took >= 550ms);
  CHECK(r.took < 3s);
  CHECK(job.leftovers().empty());
  CHECK(store->list().empty());
}

TEST_CASE("a push at full speed finishes under the same whole-transfer deadline") {
  ckpt::test::ShmTestJob job("fast");
  auto store = ckpt::ReplicaStore::open(ckpt::ReplicaStoreConfig{.job = job.name(), .store = job.name()});
  REQUIRE(store.ok());
  const Version v(job.name());
  test::LoopbackTcpPair pair;
  std::thread sender([&, fd = pair.release_client()] {
    net::BlockingConn conn(fd);
    if (!conn.read_frame(ckpt_service::kMaxCkptRequestBytes, Clock::now() + 3s)) return;
    (void)conn.write_data(v.stream, Clock::now() + 3s);
    (void)conn.read_frame(ckpt_service::kMaxCkptRequestBytes, Clock::now() + 3s);
  });
  const auto r = serve_one(pair.release_server(), *store, job.name(), v.stream.size(), short_whole_deadline());
  sender.join();
  REQUIRE_MESSAGE(r.outcome.ok(), (r.outcome.ok() ? std::string() : r.outcome.error().message));
  CHECK(store->list().size() == 1);
}

// The checkpoint service of real agents on loopback: a committed version reaches the peer the
// placement names and comes back byte-identical; a replica corrupted in memory is refused when fetched
// while the origin still serves it; a newer save supersedes an older one; unknown versions and garbage
// streams get clear refusals and leave nothing behind. With a cluster key the same replication and
// restore work over sealed connections, and a client with another key or none gets nothing.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/post.hpp>
#include <cstring>
#include <future>
#include <thread>

#include "../ckpt_shm/shm_test_job.hpp"
#include "ckpt_service/transfer.hpp"
#include "ckpt_shm/held_scan.hpp"
#include "ckpt_shm/rank_store.hpp"
#include "ckpt_shm/replica_store.hpp"
#include "ckpt_shm/shm_segment.hpp"
#include "daemon/agent.hpp"
#include "net/blocking_conn.hpp"
#include "net/blocking_open.hpp"
#include "net/cluster_seal.hpp"
#include "net/stream_hello.hpp"
#include "wire/cluster_key.hpp"
#include "wire/packet.hpp"
#include "support/eventually.hpp"

using namespace std::chrono_literals;
using shoal::daemon::Agent;
using shoal::daemon::AgentConfig;

namespace {

struct RunningAgent {
  std::unique_ptr<Agent> agent;
  std::thread thread;
  std::atomic<size_t> view_size{0};

  RunningAgent(const std::string& name, const std::string& job, std::vector<shoal::net::HostPort> seeds,
               uint64_t budget_bytes = 0, uint32_t duty_percent = 100, std::string key_file = {}) {
    AgentConfig cfg;
    cfg.name = name;
    cfg.bind = {"127.0.0.1", 0};
    cfg.seeds = std::move(seeds);
    cfg.gossip.cluster_id = "ckpt-test";
    cfg.meta.slots = 1;
    cfg.ckpt.job = job;
    cfg.meta.host = name;               // separate hosts for placement, though on one machine...
    cfg.ckpt.store = job + "-" + name;  // ...with segments kept apart
    cfg.ckpt.budget_bytes = budget_bytes;
    cfg.ckpt.replicate_duty_percent = duty_percent;
    cfg.key_file = std::move(key_file);
    agent = std::make_unique<Agent>(std::move(cfg));
    agent->add_view_observer([this](const shoal::membership::View& v) { view_size = v.size(); });
    REQUIRE(agent->start().ok());
    thread = std::thread([a = agent.get()] { (void)a->run(); });
  }
  ~RunningAgent() {
    agent->stop_now();
    if (thread.joinable()) thread.join();
    (void)shoal::ckpt::ReplicaStore::remove_all(agent->checkpoints().config().store);
    (void)shoal::ckpt::RankStore::remove_segments(agent->checkpoints().config().store, 0);
    (void)shoal::ckpt::RankStore::remove_segments(agent->checkpoints().config().store, 1);
  }
  const std::string& store() { return agent->checkpoints().config().store; }
  shoal::ckpt_service::TransferPeer peer() const {
    return {agent->addr(), agent->hello(shoal::wire::Hello::CKPT_STREAM)};
  }
  // The replica of (rank, step) kept here, if sealed.
  std::optional<std::string> replica(uint32_t rank, uint64_t step) {
    for (const auto& h : agent->checkpoints().held()) {
      if (h.replica && h.version && h.version->id.rank == rank && h.version->id.step == step) return h.segment;
    }
    return std::nullopt;
  }
};

using shoal::test::eventually;

std::byte pattern(uint64_t step, size_t i) { return std::byte((step * 131 + i * 7 + (i >> 12)) & 0xFF); }

// Saves `rank`'s version of `step` (two buffers, ~3 MiB) into `store`, as a trainer would.
std::vector<std::byte> save(const std::string& job, const std::string& store, uint64_t step, uint32_t rank = 0) {
  auto rs = shoal::ckpt::RankStore::open({.job = job, .rank = rank, .world = 2, .store = store});
  REQUIRE(rs);
  const std::vector<shoal::ckpt::BufferSpec> specs = {{"params", (3u << 20) + 5}, {"opt", 4096}};
  auto spans = rs->begin_save(step, specs);
  REQUIRE(spans);
  for (auto& b : *spans) {
    for (size_t i = 0; i < b.bytes.size(); ++i) b.bytes[i] = pattern(step, i);
  }
  auto sealed = rs->commit();
  REQUIRE(sealed);
  std::vector<std::byte> all;
  for (const auto& b : sealed->buffers) all.insert(all.end(), b.bytes.begin(), b.bytes.end());
  return all;
}

std::vector<std::byte> buffers_of(const std::vector<std::byte>& version, const shoal::ckpt::VersionInfo& info) {
  std::vector<std::byte> all;
  for (const auto& b : info.buffers) {
    all.insert(all.end(), version.begin() + static_cast<ptrdiff_t>(b.offset),
               version.begin() + static_cast<ptrdiff_t>(b.offset + b.size));
  }
  return all;
}

shoal::Result<shoal::ckpt::VersionInfo> fetch(const RunningAgent& from, const std::string& job, uint32_t rank,
                                              uint64_t step, std::vector<std::byte>& out) {
  return shoal::ckpt_service::fetch_version(
      from.peer(), job, rank, step,
      [&](const shoal::ckpt::VersionInfo& info) -> shoal::Result<std::span<std::byte>> {
        out.assign(info.total_bytes, std::byte{0});
        return std::span<std::byte>(out);
      },
      {});
}

struct Pair {
  shoal::ckpt::test::ShmTestJob job{"svc"};
  RunningAgent a;
  RunningAgent b;
  explicit Pair(uint64_t b_budget = 0, uint32_t a_duty_percent = 100, const std::string& key_file = {})
      : a("a", job.name(), {}, 0, a_duty_percent, key_file),
        b("b", job.name(), {{"127.0.0.1", a.agent->port()}}, b_budget, 100, key_file) {
    REQUIRE_MESSAGE(eventually([&] { return a.view_size == 2 && b.view_size == 2; }, 15s),
                    "the two agents never committed a view of both");
  }
};

// A fresh cluster key in a file of mode 0600 (mkstemp), removed when the test ends.
struct KeyFile {
  std::string path;
  explicit KeyFile(const std::string& text = shoal::wire::generate_key_text()) {
    char name[] = "/tmp/shoal-test-key.XXXXXX";
    const int fd = ::mkstemp(name);
    REQUIRE(fd >= 0);
    REQUIRE(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
    ::close(fd);
    path = name;
  }
  ~KeyFile() { ::unlink(path.c_str()); }
};

// The listener's refusals of `cause` at `agent`, read on its loop (the counters are the loop's).
uint64_t refused(RunningAgent& at, shoal::wire::RejectCause cause) {
  std::promise<uint64_t> count;
  boost::asio::post(at.agent->io(), [&] { count.set_value(at.agent->streams().rejected().get(cause)); });
  return count.get_future().get();
}

// A CKPT_STREAM hello of a stranger that holds `seal` (another key, or none) and claims to be "intruder".
shoal::ckpt_service::TransferPeer stranger(const RunningAgent& at, std::shared_ptr<shoal::net::ClusterSeal> seal) {
  const auto sender = shoal::wire::make_envelope("ckpt-test", "intruder", 1, "127.0.0.1:9");
  return {at.agent->addr(), shoal::net::OutgoingHello(shoal::net::encode_hello(sender, shoal::wire::Hello::CKPT_STREAM),
                                                      std::move(seal))};
}

}  // namespace

TEST_CASE("a committed version is replicated to the peer and fetched back byte-identical") {
  Pair p;
  const auto source = save(p.job.name(), p.a.store(), 10);
  p.a.agent->checkpoints().committed(0, 10);
  REQUIRE_MESSAGE(eventually([&] { return p.b.replica(0, 10).has_value(); }, 10s), "b never kept the replica");
  // The sender counts the push when the peer's answer arrives, a moment after the replica appears.
  CHECK(eventually([&] { return p.a.agent->checkpoints().counters().pushed == 1; }, 5s));

  std::vector<std::byte> got;
  auto info = fetch(p.b, p.job.name(), 0, 10, got);
  REQUIRE_MESSAGE(info, info.error().message);
  CHECK(info->id.world == 2);
  CHECK(buffers_of(got, *info) == source);

  SUBCASE("a replica corrupted in memory is refused when fetched, and the origin still serves the version") {
    auto seg = shoal::ckpt::ShmSegment::open_existing(*p.b.replica(0, 10));
    REQUIRE(seg);
    seg->bytes()[info->buffers[0].offset + 12345] ^= std::byte{0x40};
    std::vector<std::byte> bad;
    auto refused = fetch(p.b, p.job.name(), 0, 10, bad);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().message.find("data_checksum") != std::string::npos);
    std::vector<std::byte> good;
    auto from_origin = fetch(p.a, p.job.name(), 0, 10, good);
    REQUIRE_MESSAGE(from_origin, from_origin.error().message);
    CHECK(buffers_of(good, *from_origin) == source);
  }
}

TEST_CASE("a fetch of a version larger than the reports promised is refused before its memory is allocated") {
  Pair p;
  save(p.job.name(), p.a.store(), 12);  // about 3 MiB
  // A peer's announcement is believed only up to what the restore's reports promised for the version.
  bool allocated = false;
  shoal::ckpt_service::TransferLimits limits;
  limits.max_stream_bytes = 1u << 20;
  const auto got = shoal::ckpt_service::fetch_version(
      p.a.peer(), p.job.name(), 0, 12,
      [&](const shoal::ckpt::VersionInfo&) -> shoal::Result<std::span<std::byte>> {
        allocated = true;
        return shoal::fail(std::string("never asked"));
      },
      limits);
  REQUIRE_FALSE(got);
  CHECK(got.error().message.find("refused before reading it") != std::string::npos);
  CHECK_FALSE(allocated);
  // Within the promise, the same version comes whole.
  limits.max_stream_bytes = 4u << 20;
  std::vector<std::byte> out;
  const auto whole = shoal::ckpt_service::fetch_version(
      p.a.peer(), p.job.name(), 0, 12,
      [&](const shoal::ckpt::VersionInfo& info) -> shoal::Result<std::span<std::byte>> {
        out.assign(info.total_bytes, std::byte{0});
        return std::span<std::byte>(out);
      },
      limits);
  REQUIRE_MESSAGE(whole, whole.error().message);
  CHECK(whole->id.step == 12);
}

TEST_CASE("a newer save of a rank is replicated after an older one, and unknown versions are refused clearly") {
  Pair p;
  (void)save(p.job.name(), p.a.store(), 10);
  p.a.agent->checkpoints().committed(0, 10);
  const auto newer = save(p.job.name(), p.a.store(), 20);
  p.a.agent->checkpoints().committed(0, 20);
  REQUIRE_MESSAGE(eventually([&] { return p.b.replica(0, 20).has_value(); }, 10s), "b never kept step 20");
  std::vector<std::byte> got;
  auto info = fetch(p.b, p.job.name(), 0, 20, got);
  REQUIRE(info);
  CHECK(buffers_of(got, *info) == newer);

  std::vector<std::byte> none;
  auto unknown = fetch(p.b, p.job.name(), 7, 99, none);
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().message.find("does not hold rank 7 step 99") != std::string::npos);
  auto other_job = fetch(p.b, "another-job", 0, 20, none);
  REQUIRE_FALSE(other_job);
}

TEST_CASE("a garbage stream pushed on the checkpoint channel is refused and leaves nothing behind") {
  Pair p;
  using namespace shoal::ckpt_service;
  using namespace shoal::daemon;
  using namespace shoal::net;
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  auto conn = open_blocking(p.b.agent->addr(), p.a.agent->hello(shoal::wire::Hello::CKPT_STREAM), deadline, nullptr);
  REQUIRE(conn);
  shoal::wire::CkptRequest req;
  req.set_kind(shoal::wire::CkptRequest::PUSH);
  req.set_job(p.job.name());
  req.set_rank(0);  // a's own rank: admitted, so the bytes themselves are judged
  req.set_step(5);
  req.set_stream_bytes(8192);
  const auto bytes = req.SerializeAsString();
  REQUIRE(conn->write_frame(shoal::wire::type_byte(shoal::wire::FrameType::request),
                            std::as_bytes(std::span<const char>(bytes.data(), bytes.size())), deadline));
  auto accept = conn->read_frame(4096, deadline);
  REQUIRE(accept);
  std::vector<std::byte> garbage(8192);
  for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = std::byte((i * 37 + 11) & 0xFF);
  (void)conn->write_all(garbage, deadline);
  auto answer = conn->read_frame(4096, deadline);
  REQUIRE(answer);
  shoal::wire::CkptResponse r;
  REQUIRE(r.ParseFromArray(answer->payload.data(), static_cast<int>(answer->payload.size())));
  CHECK(r.status() == shoal::wire::CkptResponse::REFUSED);
  CHECK_FALSE(r.message().empty());
  CHECK_FALSE(p.b.replica(0, 5).has_value());
  for (const auto& h : p.b.agent->checkpoints().held()) CHECK_MESSAGE(!h.replica, "left behind: " << h.segment);
  CHECK(eventually([&] { return p.b.agent->checkpoints().counters().receive_refused == 1; }, 5s));
}

TEST_CASE("a replica that does not fit the host's budget is refused, and the newest one held stays") {
  Pair p(5u << 20);  // room for one ~3 MiB version, not two
  (void)save(p.job.name(), p.a.store(), 10);
  p.a.agent->checkpoints().committed(0, 10);
  REQUIRE_MESSAGE(eventually([&] { return p.b.replica(0, 10).has_value(); }, 10s), "b never kept step 10");
  (void)save(p.job.name(), p.a.store(), 20);
  p.a.agent->checkpoints().committed(0, 20);
  // Step 10 is rank 0's newest complete version at b, so the budget may not evict it for step 20.
  REQUIRE(eventually([&] { return p.b.agent->checkpoints().counters().receive_refused == 1; }, 10s));
  CHECK(p.b.replica(0, 10).has_value());
  CHECK_FALSE(p.b.replica(0, 20).has_value());
  CHECK(eventually([&] { return p.a.agent->checkpoints().counters().push_failed == 1; }, 5s));
}

TEST_CASE("replication rests between pushes for its duty cycle, then sends the newest version saved meanwhile") {
  Pair p(0, 1);  // a streams at most 1% of the time: it rests 99 times as long as each push took
  (void)save(p.job.name(), p.a.store(), 10);
  p.a.agent->checkpoints().committed(0, 10);
  REQUIRE_MESSAGE(eventually([&] { return p.a.agent->checkpoints().counters().pushed == 1; }, 10s), "10 never went");
  for (uint64_t step : {11, 12, 13}) {  // saved while the replicator rests
    (void)save(p.job.name(), p.a.store(), step);
    p.a.agent->checkpoints().committed(0, step);
  }
  REQUIRE_MESSAGE(eventually([&] { return p.b.replica(0, 13).has_value(); }, 20s), "b never kept step 13");
  CHECK(eventually([&] { return p.a.agent->checkpoints().counters().pushed == 2; }, 5s));
  CHECK_FALSE(p.b.replica(0, 11).has_value());
  CHECK_FALSE(p.b.replica(0, 12).has_value());
}

TEST_CASE("keyed agents replicate a version and restore it byte-identical over sealed connections") {
  const KeyFile key;
  Pair p(0, 100, key.path);
  REQUIRE(p.a.agent->hello(shoal::wire::Hello::CKPT_STREAM).keyed());
  const auto source = save(p.job.name(), p.a.store(), 10);
  p.a.agent->checkpoints().committed(0, 10);
  REQUIRE_MESSAGE(eventually([&] { return p.b.replica(0, 10).has_value(); }, 10s), "b never kept the replica");
  CHECK(eventually([&] { return p.a.agent->checkpoints().counters().pushed == 1; }, 5s));
  std::vector<std::byte> got;
  auto info = fetch(p.b, p.job.name(), 0, 10, got);
  REQUIRE_MESSAGE(info, info.error().message);
  CHECK(buffers_of(got, *info) == source);
  // The scattered restore (straight into a trainer's tensors) reads the same sealed stream.
  std::vector<std::vector<std::byte>> parts;
  auto scattered = shoal::ckpt_service::fetch_version_scattered(
      p.b.peer(), p.job.name(), 0, 10,
      [&](const shoal::ckpt::VersionInfo& v, size_t first,
          const shoal::ckpt::VersionReceiver&) -> shoal::Result<std::vector<std::span<std::byte>>> {
        std::vector<std::span<std::byte>> out;
        for (size_t i = first; i < v.buffers.size(); ++i) {
          parts.emplace_back(v.buffers[i].size);
          out.emplace_back(parts.back());
        }
        return out;
      },
      {});
  REQUIRE_MESSAGE(scattered, scattered.error().message);
  std::vector<std::byte> joined;
  for (const auto& part : parts) joined.insert(joined.end(), part.begin(), part.end());
  CHECK(joined == source);
  CHECK(refused(p.b, shoal::wire::RejectCause::bad_auth) == 0);
}

TEST_CASE("a client with another key, or with none, gets nothing from a keyed agent's checkpoints") {
  const KeyFile key, other_key;
  Pair p(0, 100, key.path);
  (void)save(p.job.name(), p.a.store(), 10);
  p.a.agent->checkpoints().committed(0, 10);
  REQUIRE_MESSAGE(eventually([&] { return p.b.replica(0, 10).has_value(); }, 10s), "b never kept the replica");

  auto other_ring = shoal::net::load_cluster_keys(other_key.path);
  REQUIRE(other_ring);
  REQUIRE(other_ring->has_value());
  const auto wrong = stranger(p.b, std::make_shared<shoal::net::ClusterSeal>(std::move(*other_ring)));
  const auto open = stranger(p.b, nullptr);
  const auto dest = [](std::vector<std::byte>& into) {
    return [&into](const shoal::ckpt::VersionInfo& v) -> shoal::Result<std::span<std::byte>> {
      into.assign(v.total_bytes, std::byte{0});
      return std::span<std::byte>(into);
    };
  };
  std::vector<std::byte> got;
  auto with_wrong_key = shoal::ckpt_service::fetch_version(wrong, p.job.name(), 0, 10, dest(got), {});
  CHECK_FALSE(with_wrong_key);
  auto without_key = shoal::ckpt_service::fetch_version(open, p.job.name(), 0, 10, dest(got), {});
  CHECK_FALSE(without_key);
  CHECK(got.empty());  // not even the version's prefix arrived
  CHECK(eventually([&] { return refused(p.b, shoal::wire::RejectCause::bad_auth) == 1; }, 5s));
  CHECK(eventually([&] { return refused(p.b, shoal::wire::RejectCause::no_key) == 1; }, 5s));

  // Nor can it push: a forged replica never reaches the store.
  auto seg = shoal::ckpt::ShmSegment::open_existing(*p.b.replica(0, 10));
  REQUIRE(seg);
  auto info = shoal::ckpt::decode_version(seg->bytes(), shoal::ckpt::DataCheck::skip);
  REQUIRE(info);
  const auto version = std::span<const std::byte>(seg->bytes()).first(info->total_bytes);
  CHECK_FALSE(shoal::ckpt_service::push_version(wrong, version, *info, {}));
  CHECK_FALSE(shoal::ckpt_service::push_version(open, version, *info, {}));
  CHECK(eventually([&] { return refused(p.b, shoal::wire::RejectCause::bad_auth) == 2; }, 5s));
  CHECK(p.b.agent->checkpoints().counters().receive_refused == 0);  // refused before the service saw it
}

TEST_CASE("without a named job, a cluster formed anew removes what an earlier run left; a joiner adopts its own") {
  shoal::ckpt::test::ShmTestJob job{"inherit"};
  // An earlier, unrelated run of the same (default) job name left a sealed version in a's store.
  (void)save(job.name(), job.name() + "-a", 7);
  RunningAgent a("a", job.name(), {});
  REQUIRE(eventually([&] { return a.view_size == 1; }, 15s));
  CHECK(eventually([&] { return job.leftovers().empty(); }, 5s));
  for (const auto& h : a.agent->checkpoints().held()) CHECK_MESSAGE(!h.version, "still counted: " << h.segment);

  // b's agent restarts into a cluster that is running: what its host holds is this job's (rank 1: the
  // rank the view gives b again, so b may replicate it).
  (void)save(job.name(), job.name() + "-b", 9, 1);
  RunningAgent b("b", job.name(), {{"127.0.0.1", a.agent->port()}});
  REQUIRE(eventually([&] { return a.view_size == 2 && b.view_size == 2; }, 15s));
  CHECK_MESSAGE(eventually([&] { return a.replica(1, 9).has_value(); }, 10s), "b's own version was not replicated");
}

TEST_CASE("a forged huge-step replica from outside the view is refused and leaves the real replicas in place") {
  Pair p;
  (void)save(p.job.name(), p.a.store(), 10);
  p.a.agent->checkpoints().committed(0, 10);
  REQUIRE_MESSAGE(eventually([&] { return p.b.replica(0, 10).has_value(); }, 10s), "b never kept step 10");

  // "rank 0 of world 1, step 10^9", well formed and sealed, offered by a name the view does not hold.
  shoal::ckpt::test::ShmTestJob forger{"forged"};
  constexpr uint64_t kHuge = 1'000'000'000;
  auto rs = shoal::ckpt::RankStore::open({.job = p.job.name(), .rank = 0, .world = 1, .store = forger.name()});
  REQUIRE(rs);
  const std::vector<shoal::ckpt::BufferSpec> specs = {{"params", 4096}};
  REQUIRE(rs->begin_save(kHuge, specs));
  REQUIRE(rs->commit());
  const auto segment = shoal::ckpt::ShmSegment::open_existing(*shoal::ckpt::slot_segment_name(forger.name(), 0, 0));
  REQUIRE(segment);
  const auto info = shoal::ckpt::decode_version(segment->bytes(), shoal::ckpt::DataCheck::verify);
  REQUIRE(info);
  REQUIRE(info->id.step == kHuge);
  const auto bytes = std::span<const std::byte>(segment->bytes()).first(info->total_bytes);
  const shoal::net::OutgoingHello mallory(shoal::net::encode_hello(
      shoal::wire::make_envelope("ckpt-test", "mallory", 1, "127.0.0.1:1"), shoal::wire::Hello::CKPT_STREAM));
  for (int i = 0; i < 3; ++i) {  // enough to push two real replicas out, were it kept
    auto pushed = shoal::ckpt_service::push_version({p.b.agent->addr(), mallory}, bytes, *info, {});
    CHECK_FALSE(pushed);
  }
  CHECK_FALSE(p.b.replica(0, kHuge).has_value());
  CHECK(p.b.replica(0, 10).has_value());
  // The replica is visible in /dev/shm a moment before its receive is counted.
  CHECK(eventually([&] { return p.b.agent->checkpoints().counters().received == 1; }, 5s));
  const auto c = p.b.agent->checkpoints().counters();
  CHECK(c.push_unauthorized[static_cast<size_t>(shoal::ckpt_service::Refusal::not_member)] == 3);
  CHECK(c.received == 1);

  // Nor may an outsider read what b holds; a member may.
  std::vector<std::byte> out;
  auto stolen = shoal::ckpt_service::fetch_version(
      {p.b.agent->addr(), mallory}, p.job.name(), 0, 10,
      [&](const shoal::ckpt::VersionInfo& v) -> shoal::Result<std::span<std::byte>> {
        out.assign(v.total_bytes, std::byte{0});
        return std::span<std::byte>(out);
      },
      {});
  CHECK_FALSE(stolen);
  CHECK(fetch(p.a, p.job.name(), 0, 10, out).ok());
}

TEST_CASE("a member pushing a replica of a rank the view does not give it is refused") {
  Pair p;
  // a holds rank 0 and placement sends its replicas to b; a forged "rank 1, step 10^9" from a is refused.
  shoal::ckpt::test::ShmTestJob forger{"forged-rank"};
  constexpr uint64_t kHuge = 1'000'000'000;
  auto rs = shoal::ckpt::RankStore::open({.job = p.job.name(), .rank = 1, .world = 2, .store = forger.name()});
  REQUIRE(rs);
  const std::vector<shoal::ckpt::BufferSpec> specs = {{"params", 4096}};
  REQUIRE(rs->begin_save(kHuge, specs));
  REQUIRE(rs->commit());
  const auto segment = shoal::ckpt::ShmSegment::open_existing(*shoal::ckpt::slot_segment_name(forger.name(), 1, 0));
  REQUIRE(segment);
  const auto info = shoal::ckpt::decode_version(segment->bytes(), shoal::ckpt::DataCheck::verify);
  REQUIRE(info);
  const auto bytes = std::span<const std::byte>(segment->bytes()).first(info->total_bytes);
  const shoal::ckpt_service::TransferPeer to_b{p.b.agent->addr(), p.a.agent->hello(shoal::wire::Hello::CKPT_STREAM)};
  for (int i = 0; i < 2; ++i) CHECK_FALSE(shoal::ckpt_service::push_version(to_b, bytes, *info, {}));
  CHECK_FALSE(p.b.replica(1, kHuge).has_value());
  const auto c = p.b.agent->checkpoints().counters();
  CHECK(c.push_unauthorized[static_cast<size_t>(shoal::ckpt_service::Refusal::not_its_rank)] == 2);
  CHECK(c.received == 0);

  // The rank a does hold still replicates.
  (void)save(p.job.name(), p.a.store(), 10);
  p.a.agent->checkpoints().committed(0, 10);
  CHECK_MESSAGE(eventually([&] { return p.b.replica(0, 10).has_value(); }, 10s), "a's own rank was refused too");
}

TEST_CASE("an agent that leaves on purpose removes its store's segments; one that stops abruptly keeps them") {
  Pair p;
  (void)save(p.job.name(), p.a.store(), 10);
  p.a.agent->checkpoints().committed(0, 10);
  REQUIRE_MESSAGE(eventually([&] { return p.b.replica(0, 10).has_value(); }, 10s), "b never kept step 10");
  (void)save(p.job.name(), p.b.store(), 11, 1);  // b's own rank's slots
  const auto before = shoal::ckpt::scan_held(p.b.store());
  REQUIRE(before.size() == 3);  // the replica of rank 0, rank 1's two slots

  // A stranger's object named like b's slot is refused at the scan and never removed (another user's
  // file in production; here a symbolic link, which the trust check refuses the same way).
  const auto squat = "/dev/shm/shoal." + p.b.store() + ".r7.v0";
  REQUIRE(::symlink("/dev/null", squat.c_str()) == 0);

  p.b.agent->stop();  // graceful: leave, linger, then give /dev/shm back
  p.b.thread.join();
  const auto left = shoal::ckpt::scan_held(p.b.store());
  REQUIRE(left.size() == 1);
  CHECK(left.front().refused.has_value());
  ::unlink(squat.c_str());

  // a stops as a crash would: its slot stays for a restarted agent to adopt.
  p.a.agent->stop_now();
  p.a.thread.join();
  const auto kept = shoal::ckpt::scan_held(p.a.store());
  CHECK(kept.size() == 2);  // rank 0's two slots
  CHECK(std::any_of(kept.begin(), kept.end(), [](const auto& h) { return h.version && h.version->id.step == 10; }));
}

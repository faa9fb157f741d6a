// Nothing lost on the way: a rank that keeps saving while its newest version streams to a peer. The
// save goes into a reused slot, and the version on the wire stays intact until a newer one is complete:
// the peer keeps it verified. A slot reused after that (a newer version is complete) may tear a stream
// still reading it: the peer refuses that stream and keeps the complete replica it had.
//
// The sender here is the test itself, writing the stream from the slot's mapping as the agent's
// replicator does, with a save in the middle of it; the receiver is the agent's own serve_push into a
// ReplicaStore. So "in the middle" is exact, not a race.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <thread>
#include <vector>

#include "../ckpt_shm/ckpt_pattern.hpp"
#include "../ckpt_shm/shm_test_job.hpp"
#include "ckpt.pb.h"
#include "ckpt_service/transfer.hpp"
#include "ckpt_shm/rank_store.hpp"
#include "ckpt_shm/replica_store.hpp"
#include "ckpt_shm/shm_segment.hpp"
#include "ckpt_shm/version_stream.hpp"
#include "net/blocking_conn.hpp"
#include "../support/tcp_pair.hpp"

using namespace std::chrono_literals;
using namespace shoal;
using Clock = std::chrono::steady_clock;

namespace {

constexpr size_t kStateBytes = (3u << 20) + 5;

// A connected loopback TCP pair: the sending and the receiving end of one checkpoint stream.
struct Connection {
  net::BlockingConn sender;
  net::BlockingConn receiver;
  Connection() {
    test::LoopbackTcpPair pair;
    sender = net::BlockingConn(pair.release_client());
    receiver = net::BlockingConn(pair.release_server());
  }
};

ckpt::SealedVersion save(ckpt::RankStore& rs, uint64_t step) {
  std::vector<std::byte> state(kStateBytes);
  ckpt::test::fill_pattern(state, step, 0);
  const std::vector<ckpt::BufferSpec> spec = {{"state", kStateBytes}};
  REQUIRE(rs.begin_save(step, spec));
  REQUIRE(rs.write_buffer(0, state));
  auto sealed = rs.commit();
  REQUIRE_MESSAGE(sealed, sealed.error().message);
  return *sealed;
}

// The slot's segment mapped as the replicator maps it, with the version it holds now.
struct Mapped {
  ckpt::ShmSegment segment;
  ckpt::VersionInfo info;
};

Mapped map_slot(const std::string& job, uint32_t slot) {
  auto seg = ckpt::ShmSegment::open_existing(*ckpt::slot_segment_name(job, 0, slot));
  REQUIRE(seg);
  auto info = ckpt::decode_version(seg->bytes(), ckpt::DataCheck::verify);
  REQUIRE(info);
  return Mapped{std::move(*seg), std::move(*info)};
}

// Writes bytes [from, to) of the version's stream, from the mapping, as send_stream does.
void send_range(net::BlockingConn& conn, const Mapped& m, uint64_t from, uint64_t to) {
  uint64_t at = 0;
  for (const auto piece : ckpt::stream_pieces(m.segment.bytes(), m.info)) {
    const uint64_t lo = std::max(from, at), hi = std::min<uint64_t>(to, at + piece.size());
    if (lo < hi) REQUIRE(conn.write_all(piece.subspan(lo - at, hi - lo), Clock::now() + 10s));
    at += piece.size();
  }
}

wire::CkptResponse::Status answer(net::BlockingConn& conn) {
  auto frame = conn.read_frame(ckpt_service::kMaxCkptRequestBytes, Clock::now() + 10s);
  REQUIRE_MESSAGE(frame, frame.error().message);
  wire::CkptResponse r;
  REQUIRE(r.ParseFromArray(frame->payload.data(), static_cast<int>(frame->payload.size())));
  return r.status();
}

// A peer's receiving side: serve_push into `replicas` on a thread of its own, as the agent runs it.
class PeerReceive {
 public:
  PeerReceive(ckpt::ReplicaStore& replicas, net::BlockingConn conn, const ckpt::VersionInfo& info)
      : conn_(std::move(conn)) {
    request_.set_kind(wire::CkptRequest::PUSH);
    request_.set_job(info.id.job);
    request_.set_rank(info.id.rank);
    request_.set_step(info.id.step);
    request_.set_stream_bytes(ckpt::stream_bytes(info));
    thread_ = std::thread([this, &replicas] {
      std::optional<ckpt::Incoming> incoming;
      outcome_ = ckpt_service::serve_push(
          conn_, request_, [] { return Result<bool>(true); },
          [&](const ckpt::VersionInfo& v) -> Result<std::span<std::byte>> {
            auto in = replicas.begin(v.id.rank, v.id.step, v.total_bytes);
            if (!in) return fail(in.error().message);
            incoming.emplace(std::move(*in));
            return incoming->bytes().first(v.total_bytes);
          },
          [&](const ckpt::VersionInfo&) -> Status { return replicas.complete(std::move(*incoming)); },
          ckpt_service::TransferLimits{});
      incoming.reset();  // a receive cut short leaves nothing
    });
  }
  ~PeerReceive() {
    if (thread_.joinable()) thread_.join();
  }
  const Result<ckpt::VersionInfo>& finish() {
    thread_.join();
    return *outcome_;
  }

 private:
  net::BlockingConn conn_;
  wire::CkptRequest request_;
  std::optional<Result<ckpt::VersionInfo>> outcome_;
  std::thread thread_;
};

// The replica of (0, step) kept in `replicas`, checked in full: data checksums and the saved bytes.
bool replica_intact(const ckpt::ReplicaStore& replicas, uint64_t step) {
  const auto bytes = replicas.find(0, step);
  if (!bytes) return false;
  auto v = ckpt::decode_version(*bytes, ckpt::DataCheck::verify);
  return v && v->id.step == step && ckpt::test::has_pattern(bytes->subspan(v->buffers[0].offset, kStateBytes), step, 0);
}

// What a slot holds now, verified: its step, or nullopt when it holds no intact sealed version.
std::optional<uint64_t> slot_step(const std::string& job, uint32_t slot) {
  auto seg = ckpt::ShmSegment::open_existing(*ckpt::slot_segment_name(job, 0, slot));
  if (!seg) return std::nullopt;
  auto v = ckpt::decode_version(seg->bytes(), ckpt::DataCheck::verify);
  if (!v) return std::nullopt;
  return v->id.step;
}

}  // namespace

TEST_CASE("a save into a reused slot while the newest version streams to a peer leaves that version intact") {
  ckpt::test::ShmTestJob job("reuse");
  auto rs = ckpt::RankStore::open({.job = job.name(), .rank = 0, .world = 1});
  REQUIRE(rs);
  auto peer = ckpt::ReplicaStore::open({.job = job.name(), .store = job.name() + "-peer", .keep_per_rank = 1});
  REQUIRE(peer);
  const auto v10 = save(*rs, 10);
  const auto v20 = save(*rs, 20);
  REQUIRE(v20.slot != v10.slot);

  // 1. Step 20, the newest complete version, is half on the wire when the rank saves step 30: the
  //    save reuses step 10's slot, never 20's, and the peer keeps 20 verified.
  {
    Connection c;
    const auto m = map_slot(job.name(), v20.slot);
    PeerReceive receive(*peer, std::move(c.receiver), m.info);
    REQUIRE(answer(c.sender) == wire::CkptResponse::ACCEPT);
    const uint64_t total = ckpt::stream_bytes(m.info);
    send_range(c.sender, m, 0, total / 2);
    const auto v30 = save(*rs, 30);
    CHECK(v30.slot == v10.slot);
    send_range(c.sender, m, total / 2, total);
    CHECK(answer(c.sender) == wire::CkptResponse::STORED);
    const auto& got = receive.finish();
    REQUIRE_MESSAGE(got, got.error().message);
    CHECK(replica_intact(*peer, 20));
    CHECK(slot_step(job.name(), v20.slot) == 20u);
    auto newest = rs->newest_sealed();
    REQUIRE(newest);
    CHECK(newest->step == 30);
  }

  // 2. Step 30, now the newest, streams while step 40 is saved: into 20's slot (20 is no longer the
  //    newest and nothing reads it), and 30 arrives intact; the peer's 20 gives way to it.
  {
    Connection c;
    const auto m = map_slot(job.name(), v10.slot);  // step 30 is there now
    REQUIRE(m.info.id.step == 30);
    PeerReceive receive(*peer, std::move(c.receiver), m.info);
    REQUIRE(answer(c.sender) == wire::CkptResponse::ACCEPT);
    const uint64_t total = ckpt::stream_bytes(m.info);
    send_range(c.sender, m, 0, total / 3);
    const auto v40 = save(*rs, 40);
    CHECK(v40.slot == v20.slot);
    send_range(c.sender, m, total / 3, total);
    CHECK(answer(c.sender) == wire::CkptResponse::STORED);
    const auto& got = receive.finish();
    REQUIRE_MESSAGE(got, got.error().message);
    CHECK(replica_intact(*peer, 30));
    CHECK_FALSE(peer->find(0, 20).has_value());
  }

  // 3. Once a newer version (40) is complete, step 30's slot is the one the next save reuses, also
  //    while a second peer is still reading 30: that stream tears, the second peer refuses it and keeps
  //    nothing of it, the first peer's replica of 30 and the rank's newest complete version stay whole.
  {
    auto second = ckpt::ReplicaStore::open({.job = job.name(), .store = job.name() + "-peer2", .keep_per_rank = 1});
    REQUIRE(second);
    Connection c;
    const auto m = map_slot(job.name(), v10.slot);
    REQUIRE(m.info.id.step == 30);
    PeerReceive receive(*second, std::move(c.receiver), m.info);
    REQUIRE(answer(c.sender) == wire::CkptResponse::ACCEPT);
    const uint64_t total = ckpt::stream_bytes(m.info);
    send_range(c.sender, m, 0, total / 2);
    const auto v50 = save(*rs, 50);
    CHECK(v50.slot == v10.slot);
    CHECK(slot_step(job.name(), v20.slot) == 40u);  // the newest complete version until 50 sealed
    send_range(c.sender, m, total / 2, total);
    CHECK(answer(c.sender) == wire::CkptResponse::REFUSED);
    const auto& got = receive.finish();
    REQUIRE_FALSE(got);
    CHECK(got.error().message.find("data_checksum") != std::string::npos);
    CHECK(second->list().empty());
    CHECK(replica_intact(*peer, 30));
    auto newest = rs->newest_sealed();
    REQUIRE(newest);
    CHECK(newest->step == 50);
    CHECK(slot_step(job.name(), v20.slot) == 40u);
    (void)ckpt::ReplicaStore::remove_all(job.name() + "-peer2");
  }
  (void)ckpt::ReplicaStore::remove_all(job.name() + "-peer");
}

// FETCH_RANGES against a real agent on loopback: the chunks covering a reader's ranges come back verified
// (and only those: the stream's length is the chunk arithmetic's); a copy changed in memory is refused
// with nothing of the changed chunk handed on; a prefix larger than the reports promised is refused before
// it is read; runs a client forges (overlapping, past the buffer) are refused by the server.
#include <doctest/doctest.h>

#include <atomic>
#include <thread>

#include "../ckpt_shm/shm_test_job.hpp"
#include "ckpt_service/ranged_transfer.hpp"
#include "ckpt_shm/held_scan.hpp"
#include "ckpt_shm/rank_store.hpp"
#include "ckpt_shm/shm_segment.hpp"
#include "daemon/agent.hpp"
#include "support/eventually.hpp"

using namespace std::chrono_literals;
using shoal::ckpt::ChunkRun;
using shoal::ckpt::kChecksumChunkBytes;

namespace {

constexpr uint64_t K = kChecksumChunkBytes;

struct OneAgent {
  shoal::ckpt::test::ShmTestJob job{"ranged"};
  std::unique_ptr<shoal::daemon::Agent> agent;
  std::thread thread;
  std::atomic<size_t> view_size{0};
  std::string store;

  OneAgent() {
    shoal::daemon::AgentConfig cfg;
    cfg.name = "a";
    cfg.bind = {"127.0.0.1", 0};
    cfg.gossip.cluster_id = "ranged-test";
    cfg.meta.slots = 1;
    cfg.ckpt.job = job.name();
    cfg.meta.host = "a";
    cfg.ckpt.store = store = job.name() + "-a";
    agent = std::make_unique<shoal::daemon::Agent>(std::move(cfg));
    agent->add_view_observer([this](const shoal::membership::View& v) { view_size = v.size(); });
    REQUIRE(agent->start().ok());
    thread = std::thread([a = agent.get()] { (void)a->run(); });
    REQUIRE(shoal::test::eventually([&] { return view_size == 1; }, 10s));
  }
  ~OneAgent() {
    agent->stop_now();
    if (thread.joinable()) thread.join();
    (void)shoal::ckpt::RankStore::remove_segments(store, 0);
  }
  shoal::ckpt_service::TransferPeer peer() const {
    return {agent->addr(), agent->hello(shoal::wire::Hello::CKPT_STREAM)};
  }
};

std::byte pattern(size_t i) { return std::byte((i * 7 + (i >> 16) * 13) & 0xFF); }

// Rank 0's version of step 3: "big" of four chunks (the last short), "small" of 100 bytes. Returns its segment.
std::string save(OneAgent& at) {
  auto rs = shoal::ckpt::RankStore::open({.job = at.job.name(), .rank = 0, .world = 1, .store = at.store});
  REQUIRE(rs);
  auto spans = rs->begin_save(3, std::vector<shoal::ckpt::BufferSpec>{{"big", 3 * K + 100}, {"small", 100}});
  REQUIRE(spans);
  for (auto& b : *spans) {
    for (size_t i = 0; i < b.bytes.size(); ++i) b.bytes[i] = pattern(i);
  }
  REQUIRE(rs->commit());
  for (const auto& h : shoal::ckpt::scan_held(at.store)) {
    if (h.version && h.version->id.step == 3) return h.segment;
  }
  FAIL("the saved version is not in /dev/shm");
  return {};
}

struct Received {
  uint32_t buffer;
  uint64_t offset;
  std::vector<std::byte> bytes;
};

auto fetch(OneAgent& at, std::vector<ChunkRun> runs, std::vector<Received>& got, uint64_t max_bytes = UINT64_MAX) {
  shoal::ckpt_service::TransferLimits limits;
  limits.max_stream_bytes = max_bytes;
  return shoal::ckpt_service::fetch_ranges(
      at.peer(), at.job.name(), 0, 3,
      [&](const shoal::ckpt::VersionInfo&) -> shoal::Result<std::vector<ChunkRun>> { return runs; },
      [&](uint32_t buffer, uint64_t offset, std::span<const std::byte> bytes) {
        got.push_back({buffer, offset, std::vector<std::byte>(bytes.begin(), bytes.end())});
      },
      limits);
}

}  // namespace

TEST_CASE("a ranged fetch gets exactly the chunks asked for, verified, and refuses a changed copy") {
  OneAgent a;
  const std::string segment = save(a);
  std::vector<Received> got;
  auto info = fetch(a, {{0, 1, 1}, {0, 3, 1}, {1, 0, 1}}, got);
  REQUIRE_MESSAGE(info, info.error().message);
  REQUIRE(got.size() == 3);
  CHECK(got[0].buffer == 0);
  CHECK(got[0].offset == K);
  CHECK(got[0].bytes.size() == K);
  CHECK(got[1].offset == 3 * K);
  CHECK(got[1].bytes.size() == 100);  // the short last chunk
  CHECK(got[2].buffer == 1);
  CHECK(got[2].bytes.size() == 100);
  for (const auto& r : got) {
    for (size_t i = 0; i < r.bytes.size(); ++i) REQUIRE(r.bytes[i] == pattern(r.offset + i));
  }

  SUBCASE("a chunk changed in memory: refused as a verification failure, nothing of it handed on") {
    auto seg = shoal::ckpt::ShmSegment::open_existing(segment);
    REQUIRE(seg);
    seg->bytes()[info->buffers[0].offset + 3 * K + 7] ^= std::byte{0x10};
    got.clear();
    auto refused = fetch(a, {{0, 3, 1}}, got);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().refused);
    CHECK(refused.error().message.find("'big'") != std::string::npos);
    CHECK(got.empty());
  }
  SUBCASE("a version larger than the reports promised is refused before its prefix is read") {
    got.clear();
    auto refused = fetch(a, {{0, 0, 1}}, got, info->data_offset - 1);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().refused);
    CHECK(got.empty());
  }
}

TEST_CASE("the server refuses forged runs: overlapping, out of order, past the buffer, unknown buffers") {
  OneAgent a;
  (void)save(a);
  const std::vector<std::vector<ChunkRun>> forged = {
      {{0, 0, 2}, {0, 1, 1}}, {{0, 2, 1}, {0, 0, 1}}, {{0, 3, 2}}, {{2, 0, 1}}, {{0, 0, 0}}};
  for (const auto& runs : forged) {
    shoal::wire::CkptRequest request;
    request.set_kind(shoal::wire::CkptRequest::FETCH_RANGES);
    request.set_job(a.job.name());
    request.set_rank(0);
    request.set_step(3);
    shoal::ckpt_service::TransferLimits limits;
    auto conn = shoal::ckpt_service::open_ckpt_connection(a.peer(), request, limits);
    REQUIRE(conn);
    auto answer = shoal::ckpt_service::read_ckpt_response(*conn, limits, "to the request");
    REQUIRE(answer);
    REQUIRE(answer->status() == shoal::wire::CkptResponse::OK);
    std::vector<std::byte> prefix(answer->stream_bytes());
    for (size_t filled = 0; filled < prefix.size();) {
      auto n = conn->read_data(std::span<std::byte>(prefix).subspan(filled), std::chrono::steady_clock::now() + 5s);
      REQUIRE(n);
      filled += *n;
    }
    shoal::wire::CkptRanges ask;
    for (const auto& r : runs) {
      auto* w = ask.add_runs();
      w->set_buffer(r.buffer);
      w->set_first_chunk(r.first_chunk);
      w->set_chunks(r.chunks);
    }
    std::vector<std::byte> frame(ask.ByteSizeLong());
    ask.SerializeToArray(frame.data(), static_cast<int>(frame.size()));
    REQUIRE(conn->write_frame(shoal::wire::type_byte(shoal::wire::FrameType::request), frame,
                              std::chrono::steady_clock::now() + 5s));
    auto refused = shoal::ckpt_service::read_ckpt_response(*conn, limits, "to the ranges");
    REQUIRE(refused);
    CHECK(refused->status() == shoal::wire::CkptResponse::REFUSED);
    CHECK(refused->message().find("chunk run") != std::string::npos);
  }
}

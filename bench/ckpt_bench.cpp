// shoal-bench-ckpt: the cost of in-memory checkpoints against baselines measured in the same run.
//   shoal-bench-ckpt [--bytes SIZE[,SIZE...]] [--runs R]      SIZE: bytes or 256M, 1G, 4G
// One JSON line per size:
//   save_s        a rank's blocking save (begin_save, one fused copy+checksum write, commit) into its
//                 host's shared memory; memcpy_s is a plain memcpy of the same bytes between pre-faulted
//                 buffers, save_vs_memcpy their ratio (target <= 1.1).
//   replicate_gbps  one version pushed by push_version to a real agent on loopback, which verifies every
//                 checksum and keeps it in a new shared-memory segment; tcp_gbps is a raw loopback TCP
//                 stream of the same bytes from one pre-faulted buffer to another (tcp_stream_gbps: the
//                 foundation's cache-resident stream, for reference); replicate_vs_tcp (target >= 0.8).
//   restore_s     fetch_version of that replica from the agent into a pre-faulted buffer, verified;
//                 tcp_transfer_s the raw TCP transfer of the same bytes; restore_vs_tcp (target <= 1.25).
// Every figure is the median of R runs.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "base/log.hpp"
#include "baseline_measure.hpp"
#include "ckpt_service/transfer.hpp"
#include "ckpt_shm/rank_store.hpp"
#include "ckpt_shm/replica_store.hpp"
#include "ckpt_shm/shm_segment.hpp"
#include "daemon/agent.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using namespace shoal;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Host {
  std::unique_ptr<shoal::daemon::Agent> agent;
  std::thread thread;
  Host(const std::string& name, const std::string& job, std::vector<shoal::net::HostPort> seeds) {
    shoal::daemon::AgentConfig cfg;
    cfg.name = name;
    cfg.bind = {"127.0.0.1", 0};
    cfg.seeds = std::move(seeds);
    cfg.gossip.cluster_id = "bench";
    cfg.ckpt.job = job;
    cfg.meta.host = name;
    cfg.ckpt.store = job + "-" + name;
    cfg.ckpt.stall_timeout = std::chrono::milliseconds(60'000);
    cfg.ckpt.keep_per_rank = 1;  // one replica plus the one arriving: 4 GiB versions fit this machine
    agent = std::make_unique<shoal::daemon::Agent>(std::move(cfg));
    if (auto ok = agent->start(); !ok) throw std::runtime_error("agent: " + ok.error().message);
    thread = std::thread([a = agent.get()] { (void)a->run(); });
  }
  ~Host() {
    agent->stop_now();
    thread.join();
  }
};

struct Result {
  double save_s, memcpy_s, replicate_s, tcp_s, tcp_stream_s, restore_s;
};

// Steps only grow over the whole run: the receiver keeps the newest replicas and refuses older ones.
uint64_t g_step = 0;

Result measure(size_t bytes, int runs, const std::string& job, Host& receiver) {
  Result out{};
  const auto tcp = bench::tcp_loopback_seconds(bytes, runs, 4u << 20, true);
  out.tcp_s = bench::median(tcp);
  out.tcp_stream_s = bench::median(bench::tcp_loopback_seconds(bytes, runs));
  out.memcpy_s = bench::median(bench::memcpy_seconds(bytes, runs));

  const std::string store = job + "-origin";
  auto rs = ckpt::RankStore::open({.job = job, .rank = 0, .world = 2, .store = store});
  if (!rs) throw std::runtime_error(rs.error().message);
  std::vector<std::byte> state(bytes);
  for (size_t i = 0; i < bytes; i += 4096) state[i] = std::byte(i >> 12);
  const std::vector<ckpt::BufferSpec> spec = {{"state", bytes}};
  std::vector<double> saves, pushes, fetches;
  const shoal::ckpt_service::TransferPeer peer{receiver.agent->addr(), receiver.agent->hello(wire::Hello::CKPT_STREAM)};
  shoal::ckpt_service::TransferLimits limits{.stall_timeout = std::chrono::milliseconds(60'000), .cancel = nullptr};
  std::vector<std::byte> into;
  for (int r = 0; r < runs + 2; ++r) {
    const uint64_t step = ++g_step;
    state[static_cast<size_t>(r) * 64] = std::byte(r);
    const auto t0 = Clock::now();
    auto spans = rs->begin_save(step, spec);
    if (!spans) throw std::runtime_error(spans.error().message);
    if (auto w = rs->write_buffer(0, state); !w) throw std::runtime_error(w.error().message);
    auto sealed = rs->commit();
    if (!sealed) throw std::runtime_error(sealed.error().message);
    const double save_s = since(t0);

    // Replicate this version to the receiving agent (a new step each time), then fetch it back.
    auto seg = ckpt::ShmSegment::open_existing(*ckpt::slot_segment_name(store, 0, sealed->slot));
    if (!seg) throw std::runtime_error(seg.error().message);
    auto info = ckpt::decode_version(seg->bytes(), ckpt::DataCheck::skip);
    if (!info) throw std::runtime_error(info.error().detail);
    const auto version = std::span<const std::byte>(seg->bytes()).first(info->total_bytes);
    const auto t1 = Clock::now();
    auto pushed = shoal::ckpt_service::push_version(peer, version, *info, limits);
    if (!pushed || *pushed != shoal::ckpt_service::PushOutcome::stored) {
      throw std::runtime_error("push: " + (pushed ? std::string("the peer already held it") : pushed.error().message));
    }
    const double push_s = since(t1);
    if (into.size() != info->total_bytes) into.assign(info->total_bytes, std::byte{1});  // pre-faulted, as the baseline's
    const auto t2 = Clock::now();
    auto got = shoal::ckpt_service::fetch_version(
        peer, job, 0, step,
        [&](const ckpt::VersionInfo& v) -> shoal::Result<std::span<std::byte>> {
          return std::span<std::byte>(into).first(v.total_bytes);
        },
        limits);
    if (!got) throw std::runtime_error("fetch: " + got.error().message);
    // The first two rounds fault in both save slots and both replica segments, as a trainer's first
    // saves do; after them every save and receive reuses memory already mapped.
    if (r < 2) continue;
    saves.push_back(save_s);
    pushes.push_back(push_s);
    fetches.push_back(since(t2));
  }
  out.save_s = bench::median(saves);
  out.replicate_s = bench::median(pushes);
  out.restore_s = bench::median(fetches);
  (void)ckpt::RankStore::remove_segments(store, 0);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<size_t> sizes = {size_t(256) << 20, size_t(1) << 30};
  int runs = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--bytes" && i + 1 < argc) {
      if (!bench::parse_sizes(argv[++i], &sizes)) {
        std::fprintf(stderr, "shoal-bench-ckpt: --bytes takes sizes like 268435456, 256M or 1G, comma separated\n");
        return 2;
      }
    } else if (a == "--runs" && i + 1 < argc) {
      runs = std::atoi(argv[++i]);
      if (runs < 1) {
        std::fprintf(stderr, "shoal-bench-ckpt: --runs takes a positive number\n");
        return 2;
      }
    } else {
      std::fprintf(stderr,
                   "usage: shoal-bench-ckpt [--bytes SIZE[,SIZE...]] [--runs R]\n"
                   "one JSON line per size: save vs memcpy, replication vs raw loopback TCP, restore from a peer vs\n"
                   "the raw TCP transfer of the same bytes (medians of R runs; default sizes 256M,1G; R 3)\n");
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }
  try {
    const char* env = std::getenv("SHOAL_LOG");
    if (auto spec = log::parse_spec(env ? env : "warn")) log::setup(*spec);
    const std::string job = "bench" + std::to_string(::getpid());
    Host receiver("peer", job, {});
    for (const size_t bytes : sizes) {
      const auto m = measure(bytes, runs, job, receiver);
      std::printf(
          "{\"bench\":\"ckpt\",\"bytes\":%zu,\"runs\":%d,\"save_s\":%.6f,\"memcpy_s\":%.6f,\"save_vs_memcpy\":%.3f,"
          "\"replicate_gbps\":%.3f,\"tcp_gbps\":%.3f,\"tcp_stream_gbps\":%.3f,\"replicate_vs_tcp\":%.3f,"
          "\"restore_s\":%.6f,\"tcp_transfer_s\":%.6f,\"restore_vs_tcp\":%.3f}\n",
          bytes, runs, m.save_s, m.memcpy_s, m.save_s / m.memcpy_s, bench::gbps(bytes, m.replicate_s),
          bench::gbps(bytes, m.tcp_s), bench::gbps(bytes, m.tcp_stream_s), m.tcp_s / m.replicate_s, m.restore_s, m.tcp_s,
          m.restore_s / m.tcp_s);
      std::fflush(stdout);
    }
    (void)ckpt::ReplicaStore::remove_all(job + "-peer");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shoal-bench-ckpt: %s\n", e.what());
    return 1;
  }
  return 0;
}

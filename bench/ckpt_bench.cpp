// shoal-bench-ckpt: the cost of in-memory checkpoints against baselines measured in the same run.
//   shoal-bench-ckpt [--bytes SIZE[,SIZE...]] [--runs R]      SIZE: bytes or 256M, 1G, 4G
// One JSON line per size, every figure the median of R runs (default 5):
//   save_s        a rank's steady-state blocking save (begin_save, one fused copy+checksum write,
//                 commit) into a slot it has saved into before; memcpy_s is a plain memcpy of the same
//                 bytes between pre-faulted buffers; save_vs_memcpy their ratio.
//   save_cold_s   the first save of that size into a fresh store (segments created, pages faulted in);
//                 save_cold_vs_memcpy. save_prepared_s: that first save after RankStore::prepare.
//   replicate_gbps  one version pushed by push_version to a real agent on loopback, which verifies every
//                 checksum and keeps it in shared memory: the peer of a two-agent cluster whose committed
//                 view places this host's replicas there (bench/replica_pair.hpp); tcp_gbps is a raw
//                 loopback TCP stream of the same bytes from one pre-faulted buffer to another
//                 (tcp_stream_gbps: a cache-resident stream, for reference); replicate_vs_tcp.
//   restore_s     fetch_version of that replica from the agent into a ready buffer (the state's own
//                 memory, as a trainer restores into its live state), verified; tcp_transfer_s the raw
//                 TCP transfer of the same bytes; restore_vs_tcp.
//   load_s        a local restore: the newest version's buffer copied out of its slot into the state's
//                 memory and verified in the same pass (copy_and_verify); load_vs_memcpy.
// and where the time goes (the stage keys, see stage_keys below).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <string>
#include <vector>

#include "base/log.hpp"
#include "baseline_measure.hpp"
#include "ckpt_service/transfer.hpp"
#include "ckpt_shm/checksum.hpp"
#include "ckpt_shm/rank_store.hpp"
#include "ckpt_shm/shm_segment.hpp"
#include "replica_pair.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using namespace shoal;

double seconds(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// Samples by key; medians at the end.
struct Samples {
  std::map<std::string, std::vector<double>> by_key;
  void add(const std::string& key, double v) { by_key[key].push_back(v); }
  double median(const std::string& key) const {
    const auto it = by_key.find(key);
    return it == by_key.end() ? 0.0 : bench::median(it->second);
  }
};

// Where the time of each measured operation goes, in the order printed.
//   save:      save[_cold]_begin_s   begin_save: picking the slot, creating or growing and mapping the
//                                    segment (a cold save faults its pages in here), writing the header
//              save[_cold]_copy_s    write_buffer: the copy with its checksum, one pass
//              save[_cold]_commit_s  commit: sealing the version
//              checksum_s            buffer_checksum of the same bytes alone, for reference
//   replicate: push_answer_s         connect, hello, request, until the agent accepts
//              push_send_s           the version's bytes written (the agent receiving and verifying
//                                    as they arrive, into its ready replica segment)
//              push_stored_s         after the last byte until the agent says it kept the version
//   restore:   fetch_answer_s        connect, hello, request, until the agent announces the version
//              fetch_prefix_s        the version's prefix received and checked, destination ready
//              fetch_receive_s       the buffers received and verified as they arrive
const char* const kStageKeys[] = {"save_begin_s",     "save_copy_s",        "save_commit_s",  "save_cold_begin_s",
                                  "save_cold_copy_s", "save_cold_commit_s", "checksum_s",     "push_answer_s",
                                  "push_send_s",      "push_stored_s",      "fetch_answer_s", "fetch_prefix_s",
                                  "fetch_receive_s"};

// Steps only grow over the whole run: the receiver keeps the newest replicas and refuses older ones.
uint64_t g_step = 0;

ckpt::SealedVersion save_once(ckpt::RankStore& rs, std::span<const std::byte> state, Samples& out,
                              const std::string& prefix) {
  const std::vector<ckpt::BufferSpec> spec = {{"state", state.size()}};
  const auto t0 = Clock::now();
  auto spans = rs.begin_save(++g_step, spec);
  if (!spans) throw std::runtime_error(spans.error().message);
  const auto t1 = Clock::now();
  if (auto w = rs.write_buffer(0, state); !w) throw std::runtime_error(w.error().message);
  const auto t2 = Clock::now();
  auto sealed = rs.commit();
  if (!sealed) throw std::runtime_error(sealed.error().message);
  const auto t3 = Clock::now();
  out.add(prefix + "_begin_s", seconds(t0, t1));
  out.add(prefix + "_copy_s", seconds(t1, t2));
  out.add(prefix + "_commit_s", seconds(t2, t3));
  out.add(prefix + "_s", seconds(t0, t3));
  return *sealed;
}

void measure_cold_saves(size_t bytes, int runs, const std::string& job, std::span<const std::byte> state,
                        Samples& out) {
  const std::string store = job + "-cold";
  for (int r = 0; r < runs; ++r) {
    (void)ckpt::RankStore::remove_segments(store, 0);
    auto rs = ckpt::RankStore::open({.job = job, .rank = 0, .world = 2, .store = store});
    if (!rs) throw std::runtime_error(rs.error().message);
    (void)save_once(*rs, state.first(bytes), out, "save_cold");
  }
  // The same first save, its memory readied by prepare() beforehand (as a trainer that knows its state's
  // size before the first save does).
  const auto plan = ckpt::plan_layout(std::vector<ckpt::BufferSpec>{{"state", bytes}});
  if (!plan) throw std::runtime_error(plan.error().message);
  for (int r = 0; r < runs; ++r) {
    (void)ckpt::RankStore::remove_segments(store, 0);
    auto rs = ckpt::RankStore::open({.job = job, .rank = 0, .world = 2, .store = store});
    if (!rs) throw std::runtime_error(rs.error().message);
    rs->prepare(plan->total_bytes);
    rs->wait_prepared();
    (void)save_once(*rs, state.first(bytes), out, "save_prepared");
  }
  (void)ckpt::RankStore::remove_segments(store, 0);
}

// `storage` is laid out as the version is (prefix, then the state at the data offset), so that a fetch
// writes straight into the state's own memory: no buffer beside it (a 4 GiB run fits in 20 GiB).
void measure_steady(int runs, const std::string& job, std::span<std::byte> storage, std::span<std::byte> state,
                    const bench::ReplicaPair& pair, Samples& out) {
  const std::string store = pair.trainer_store();
  auto rs = ckpt::RankStore::open({.job = job, .rank = pair.rank(), .world = pair.world(), .store = store});
  if (!rs) throw std::runtime_error(rs.error().message);
  const shoal::ckpt_service::TransferPeer peer = pair.to_peer();
  shoal::ckpt_service::TransferPhases phases;
  const shoal::ckpt_service::TransferLimits limits{
      .stall_timeout = std::chrono::milliseconds(60'000), .cancel = nullptr, .phases = &phases};
  for (int r = 0; r < runs + 2; ++r) {
    // The first two rounds fault in both save slots and both replica segments, as a trainer's first
    // saves do; after them every save and receive reuses memory already mapped.
    const bool counted = r >= 2;
    Samples warmup;
    Samples& sink = counted ? out : warmup;
    state[static_cast<size_t>(r) * 64] = std::byte(r);
    const auto sealed = save_once(*rs, state, sink, "save");

    // Replicate this version to the receiving agent (a new step each time), then fetch it back.
    auto seg = ckpt::ShmSegment::open_existing(*ckpt::slot_segment_name(store, pair.rank(), sealed.slot));
    if (!seg) throw std::runtime_error(seg.error().message);
    auto info = ckpt::decode_version(seg->bytes(), ckpt::DataCheck::skip);
    if (!info) throw std::runtime_error(info.error().detail);
    const auto version = std::span<const std::byte>(seg->bytes()).first(info->total_bytes);

    // A local restore: the buffer out of the slot into the state's memory, checked on the way.
    const auto& b = info->buffers[0];
    const auto t_load = Clock::now();
    if (!ckpt::copy_and_verify(state, version.subspan(b.offset, b.size), b.checksum)) {
      throw std::runtime_error("load: the slot's buffer fails its checksum");
    }
    sink.add("load_s", seconds(t_load, Clock::now()));

    auto pushed = shoal::ckpt_service::push_version(peer, version, *info, limits);
    if (!pushed || *pushed != shoal::ckpt_service::PushOutcome::stored) {
      throw std::runtime_error("push: " + (pushed ? std::string("the peer already held it") : pushed.error().message));
    }
    sink.add("push_answer_s", seconds(phases.started, phases.answered));
    sink.add("push_send_s", seconds(phases.answered, phases.streamed));
    sink.add("push_stored_s", seconds(phases.streamed, phases.done));
    sink.add("replicate_s", seconds(phases.started, phases.done));

    if (storage.size() < info->total_bytes) throw std::runtime_error("the state's storage is smaller than its version");
    auto got = shoal::ckpt_service::fetch_version(
        peer, job, pair.rank(), sealed.step,
        [&](const ckpt::VersionInfo& v) -> shoal::Result<std::span<std::byte>> { return storage.first(v.total_bytes); },
        limits);
    if (!got) throw std::runtime_error("fetch: " + got.error().message);
    sink.add("fetch_answer_s", seconds(phases.started, phases.answered));
    sink.add("fetch_prefix_s", seconds(phases.answered, phases.attached));
    sink.add("fetch_receive_s", seconds(phases.attached, phases.streamed));
    sink.add("restore_s", seconds(phases.started, phases.done));
  }
  (void)ckpt::RankStore::remove_segments(store, pair.rank());
}

void measure(size_t bytes, int runs, const std::string& job, const bench::ReplicaPair& pair) {
  Samples s;
  for (const double v : bench::tcp_loopback_seconds(bytes, runs, 4u << 20, true)) s.add("tcp_s", v);
  for (const double v : bench::tcp_loopback_seconds(bytes, runs)) s.add("tcp_stream_s", v);
  for (const double v : bench::memcpy_seconds(bytes, runs)) s.add("memcpy_s", v);

  const auto plan = ckpt::plan_layout(std::vector<ckpt::BufferSpec>{{"state", bytes}});
  if (!plan) throw std::runtime_error(plan.error().message);
  // Page-aligned, as a trainer's tensors (at least 64-byte aligned) and segments are: malloc's large
  // blocks start 16 bytes into a page.
  std::vector<std::byte> raw(plan->total_bytes + 4096);
  const size_t skew = (4096 - reinterpret_cast<uintptr_t>(raw.data()) % 4096) % 4096;
  const auto storage = std::span<std::byte>(raw).subspan(skew, plan->total_bytes);
  const auto state = storage.subspan(plan->offsets[0], bytes);
  for (size_t i = 0; i < bytes; i += 4096) state[i] = std::byte(i >> 12);
  for (int r = 0; r < runs; ++r) {
    const auto t = Clock::now();
    const volatile uint32_t sum = ckpt::buffer_checksum(state);
    (void)sum;
    s.add("checksum_s", seconds(t, Clock::now()));
  }
  measure_cold_saves(bytes, runs, job, state, s);
  measure_steady(runs, job, storage, state, pair, s);

  const double memcpy_s = s.median("memcpy_s"), tcp_s = s.median("tcp_s");
  std::string line = "{\"bench\":\"ckpt\",\"bytes\":" + std::to_string(bytes) + ",\"runs\":" + std::to_string(runs);
  const auto put = [&](const char* key, double v, int decimals) {
    char text[64];
    std::snprintf(text, sizeof text, "%.*f", decimals, v);
    line += std::string(",\"") + key + "\":" + text;
  };
  put("save_s", s.median("save_s"), 6);
  put("memcpy_s", memcpy_s, 6);
  put("save_vs_memcpy", s.median("save_s") / memcpy_s, 3);
  put("save_cold_s", s.median("save_cold_s"), 6);
  put("save_cold_vs_memcpy", s.median("save_cold_s") / memcpy_s, 3);
  put("save_prepared_s", s.median("save_prepared_s"), 6);
  put("save_prepared_vs_memcpy", s.median("save_prepared_s") / memcpy_s, 3);
  put("replicate_gbps", bench::gbps(bytes, s.median("replicate_s")), 3);
  put("tcp_gbps", bench::gbps(bytes, tcp_s), 3);
  put("tcp_stream_gbps", bench::gbps(bytes, s.median("tcp_stream_s")), 3);
  put("replicate_vs_tcp", tcp_s / s.median("replicate_s"), 3);
  put("restore_s", s.median("restore_s"), 6);
  put("tcp_transfer_s", tcp_s, 6);
  put("restore_vs_tcp", s.median("restore_s") / tcp_s, 3);
  put("load_s", s.median("load_s"), 6);
  put("load_vs_memcpy", s.median("load_s") / memcpy_s, 3);
  for (const char* key : kStageKeys) put(key, s.median(key), 6);
  std::printf("%s}\n", line.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<size_t> sizes = {size_t(256) << 20, size_t(1) << 30};
  int runs = 5;
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
                   "one JSON line per size: save (steady and cold) vs memcpy, replication vs raw loopback TCP,\n"
                   "restore from a peer vs the raw TCP transfer of the same bytes, and the stages of each\n"
                   "(medians of R runs; default sizes 256M,1G; R 5)\n");
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }
  try {
    const char* env = std::getenv("SHOAL_LOG");
    if (auto spec = log::parse_spec(env ? env : "warn")) log::setup(*spec);
    const std::string job = "bench" + std::to_string(::getpid());
    const bench::ReplicaPair pair({.job = job, .key_file = {}});  // an open cluster, as before
    for (const size_t bytes : sizes) measure(bytes, runs, job, pair);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shoal-bench-ckpt: %s\n", e.what());
    return 1;
  }
  return 0;
}

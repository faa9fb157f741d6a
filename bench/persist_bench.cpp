// shoal-bench-persist: persisting a checkpoint version to a directory against the disk's own speed,
// measured in the same run.
//   shoal-bench-persist [--bytes SIZE[,SIZE...]] [--runs R] [--dir DIR]      SIZE: bytes or 256M, 1G
// One JSON line per size:
//   persist_s       PersistDir::persist of one sealed version held in shared memory: prefix checked,
//                   bytes copied through the bounce buffer and checksummed, written, fsynced, renamed,
//                   the directory fsynced and the manifest rewritten;
//   write_fsync_s   write() of the same bytes from a pre-faulted buffer to a new file in the same
//                   directory, then fsync: what the disk allows; persist_vs_write their ratio.
// Every figure is the median of R runs. DIR defaults to $TMPDIR or /tmp; use the disk --ckpt-dir will use.
// Both write into a private directory the run makes inside DIR, and removes.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "base/log.hpp"
#include "baseline_measure.hpp"
#include "ckpt_shm/persist_dir.hpp"
#include "ckpt_shm/rank_store.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using namespace shoal;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Figures {
  double persist_s, write_fsync_s;
};

// Steps only grow over the whole run: the directory keeps the newest and refuses older ones.
uint64_t g_step = 0;

Figures measure(size_t bytes, int runs, const std::string& job, const std::string& dir) {
  Figures out{};
  out.write_fsync_s = bench::median(bench::write_fsync_seconds(bytes, runs, dir));
  auto rs = ckpt::RankStore::open({.job = job, .rank = 0, .world = 1});
  if (!rs) throw std::runtime_error(rs.error().message);
  auto pd = ckpt::PersistDir::open({.dir = dir, .job = job, .keep_per_rank = static_cast<uint32_t>(runs) + 1});
  if (!pd) throw std::runtime_error(pd.error().message);
  std::vector<std::byte> state(bytes, std::byte{3});
  std::vector<double> samples;
  for (int r = 0; r < runs; ++r) {
    const uint64_t step = ++g_step;
    state[static_cast<size_t>(r) * 64] = std::byte(r);
    if (auto s = rs->begin_save(step, std::vector<ckpt::BufferSpec>{{"state", bytes}}); !s) {
      throw std::runtime_error(s.error().message);
    }
    if (auto w = rs->write_buffer(0, state); !w) throw std::runtime_error(w.error().message);
    auto sealed = rs->commit();
    if (!sealed) throw std::runtime_error(sealed.error().message);
    auto seg = ckpt::ShmSegment::open_existing(*ckpt::slot_segment_name(job, 0, sealed->slot));
    if (!seg) throw std::runtime_error(seg.error().message);
    auto info = ckpt::decode_version(seg->bytes(), ckpt::DataCheck::skip);
    if (!info) throw std::runtime_error(info.error().detail);
    const auto t = Clock::now();
    auto written = pd->persist(std::span<const std::byte>(seg->bytes()).first(info->total_bytes));
    if (!written) throw std::runtime_error("persist: " + written.error().message);
    samples.push_back(since(t));
  }
  out.persist_s = bench::median(samples);
  (void)ckpt::RankStore::remove_segments(job, 0);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<size_t> sizes = {size_t(256) << 20, size_t(1) << 30};
  int runs = 3;
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = tmp && *tmp ? tmp : "/tmp";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--bytes" && i + 1 < argc) {
      if (!bench::parse_sizes(argv[++i], &sizes)) {
        std::fprintf(stderr, "shoal-bench-persist: --bytes takes sizes like 268435456, 256M or 1G, comma separated\n");
        return 2;
      }
    } else if (a == "--runs" && i + 1 < argc) {
      runs = std::atoi(argv[++i]);
      if (runs < 1) {
        std::fprintf(stderr, "shoal-bench-persist: --runs takes a positive number\n");
        return 2;
      }
    } else if (a == "--dir" && i + 1 < argc) {
      dir = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: shoal-bench-persist [--bytes SIZE[,SIZE...]] [--runs R] [--dir DIR]\n"
                   "one JSON line per size: persisting a version to DIR vs write+fsync of the same bytes there\n"
                   "(medians of R runs; default sizes 256M,1G; R 3; DIR $TMPDIR or /tmp)\n");
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }
  const std::string job = "benchp" + std::to_string(::getpid());
  // A directory of this run's own inside DIR (mode 0700): a persist directory must not be writable by
  // others, and $TMPDIR or /tmp itself is.
  std::string private_dir = dir + "/shoal-bench-persist.XXXXXX";
  if (::mkdtemp(private_dir.data()) == nullptr) {
    std::fprintf(stderr, "shoal-bench-persist: cannot make a directory in %s\n", dir.c_str());
    return 1;
  }
  dir = private_dir;
  int status = 0;
  try {
    const char* env = std::getenv("SHOAL_LOG");
    if (auto spec = log::parse_spec(env ? env : "warn")) log::setup(*spec);
    for (const size_t bytes : sizes) {
      const auto m = measure(bytes, runs, job, dir);
      std::printf(
          "{\"bench\":\"persist\",\"bytes\":%zu,\"runs\":%d,\"persist_s\":%.6f,\"write_fsync_s\":%.6f,"
          "\"persist_vs_write\":%.3f,\"persist_gbps\":%.3f,\"write_gbps\":%.3f}\n",
          bytes, runs, m.persist_s, m.write_fsync_s, m.persist_s / m.write_fsync_s, bench::gbps(bytes, m.persist_s),
          bench::gbps(bytes, m.write_fsync_s));
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shoal-bench-persist: %s\n", e.what());
    status = 1;
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  (void)ckpt::RankStore::remove_segments(job, 0);
  return status;
}

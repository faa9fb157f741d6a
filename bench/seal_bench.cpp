// shoal-bench-seal: the cost of sealing and opening packets with the cluster key, against a memcpy of
// the same packets measured in the same run.
//   shoal-bench-seal [--packets N] [--runs R]
// One JSON line per operation and packet size (200 bytes: a typical gossip packet; 1400: the largest):
//   op            "seal" (PacketSealer::seal into a new buffer) or "open" (open_sealed of packets sealed
//                 beforehand, a fresh ReplayGuard per run, so every packet is fresh and recorded);
//   pps, mb_per_s packets and plaintext megabytes (10^6) per second on one core;
//   memcpy_pps, memcpy_mb_per_s  the same N packets copied one by one with memcpy into cache-resident
//                 buffers: the least any per-packet transformation costs;
//   vs_memcpy     time per packet of op divided by time per packet of memcpy.
// Every figure is the median of R runs of N packets each. memcpy_seconds in baseline_measure.hpp is not
// used: it times a single copy per sample, below the clock's resolution for a 200-byte packet.
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "baseline_measure.hpp"
#include "wire/sealed_packet.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using namespace shoal;

constexpr int64_t kNowMs = 1'700'000'000'000;
// As an agent seals and opens: for one address, opened by a host that knows itself by two.
constexpr std::string_view kDestination = "10.0.0.2:7946";
constexpr std::array<std::string_view, 2> kOwn = {"10.0.0.2:7946", "10.0.0.2:7946"};
constexpr size_t kCopySlots = 64;  // memcpy destinations, cycled so they stay in cache as the crypto's do

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Keeps the compiler from dropping work whose result is never read.
void keep(const void* p) { asm volatile("" : : "r"(p) : "memory"); }

struct Figures {
  double memcpy_s, seal_s, open_s;  // per run of N packets, medians
};

Figures measure(wire::PacketSealer& sealer, size_t bytes, size_t packets, int runs) {
  std::vector<std::byte> plain(bytes);
  for (size_t i = 0; i < bytes; ++i) plain[i] = std::byte(i * 31);
  std::vector<std::byte> slots(kCopySlots * bytes);
  std::vector<double> copies, seals, opens;
  for (int r = 0; r < runs + 1; ++r) {  // the first round warms caches and the allocator, not counted
    const auto t0 = Clock::now();
    for (size_t i = 0; i < packets; ++i) {
      std::byte* dst = slots.data() + (i % kCopySlots) * bytes;
      std::memcpy(dst, plain.data(), bytes);
      keep(dst);
    }
    const double copy_s = since(t0);

    const auto t1 = Clock::now();
    for (size_t i = 0; i < packets; ++i) {
      const auto sealed = sealer.seal(plain, kDestination, kNowMs);
      keep(sealed.data());
    }
    const double seal_s = since(t1);

    std::vector<std::vector<std::byte>> batch;
    batch.reserve(packets);
    for (size_t i = 0; i < packets; ++i) batch.push_back(sealer.seal(plain, kDestination, kNowMs));
    wire::ReplayGuard guard;
    size_t opened = 0;
    const auto t2 = Clock::now();
    for (const auto& sealed : batch) {
      auto out = wire::open_sealed(sealer.keys(), sealed, kOwn, kNowMs, guard);
      opened += out.ok() ? 1 : 0;
      keep(&out);
    }
    const double open_s = since(t2);
    if (opened != packets) {
      std::fprintf(stderr, "shoal-bench-seal: only %zu of %zu packets opened\n", opened, packets);
      std::exit(1);
    }
    if (r == 0) continue;
    copies.push_back(copy_s);
    seals.push_back(seal_s);
    opens.push_back(open_s);
  }
  return {bench::median(copies), bench::median(seals), bench::median(opens)};
}

void print(const char* op, size_t bytes, size_t packets, int runs, double op_s, double memcpy_s) {
  const double n = double(packets);
  std::printf(
      "{\"bench\":\"seal\",\"op\":\"%s\",\"bytes\":%zu,\"packets\":%zu,\"runs\":%d,\"pps\":%.0f,\"mb_per_s\":%.1f,"
      "\"ns_per_packet\":%.1f,\"memcpy_pps\":%.0f,\"memcpy_mb_per_s\":%.1f,\"vs_memcpy\":%.1f}\n",
      op, bytes, packets, runs, n / op_s, n * double(bytes) / op_s / 1e6, op_s / n * 1e9, n / memcpy_s,
      n * double(bytes) / memcpy_s / 1e6, op_s / memcpy_s);
}

}  // namespace

int main(int argc, char** argv) {
  size_t packets = 50'000;
  int runs = 7;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--packets" && i + 1 < argc) {
      packets = std::strtoull(argv[++i], nullptr, 10);
      if (packets < 1) {
        std::fprintf(stderr, "shoal-bench-seal: --packets takes a positive number\n");
        return 2;
      }
    } else if (a == "--runs" && i + 1 < argc) {
      runs = std::atoi(argv[++i]);
      if (runs < 1) {
        std::fprintf(stderr, "shoal-bench-seal: --runs takes a positive number\n");
        return 2;
      }
    } else {
      std::fprintf(stderr,
                   "usage: shoal-bench-seal [--packets N] [--runs R]\n"
                   "one JSON line per operation (seal, open) and packet size (200, 1400 bytes), against memcpy of\n"
                   "the same packets (medians of R runs of N packets; default N 50000, R 7)\n");
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }
  if (auto ok = wire::init_sodium(); !ok) {
    std::fprintf(stderr, "shoal-bench-seal: %s\n", ok.error().message.c_str());
    return 1;
  }
  auto keys = wire::parse_key_text(wire::generate_key_text(), "generated");
  if (!keys) {
    std::fprintf(stderr, "shoal-bench-seal: %s\n", keys.error().message.c_str());
    return 1;
  }
  wire::PacketSealer sealer(*keys);
  for (const size_t bytes : {size_t(200), size_t(1400)}) {
    const Figures f = measure(sealer, bytes, packets, runs);
    print("seal", bytes, packets, runs, f.seal_s, f.memcpy_s);
    print("open", bytes, packets, runs, f.open_s, f.memcpy_s);
    std::fflush(stdout);
  }
  return 0;
}

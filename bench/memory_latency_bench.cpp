// shoal-bench-memory-latency: what one cold memory access costs on this machine, the floor under
// the simulator's speed at thousands of members (each event lands on a member whose state is cold).
//   shoal-bench-memory-latency [--bytes LIST] [--chains LIST] [--loads N]
// For each buffer size and each number of chains k it walks k independent random cycles through
// the buffer's 64-byte lines, each load depending on the one before in its chain, and prints the
// wall time per load: with k = 1 the latency of a dependent access, with larger k how many misses
// the core keeps in flight at once (the most that prefetching can overlap). A memcpy of the
// largest buffer is measured in the same run as the baseline.
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "baseline_measure.hpp"

namespace {

constexpr size_t kLine = 64;
constexpr size_t kMaxChains = 32;

// A buffer of `bytes` whose lines form one random cycle: line i holds the byte offset of the next.
// Huge pages are asked for (as shoal-sim does), so that the figure is the cache miss, not the TLB.
struct Ring {
  explicit Ring(size_t bytes) : lines(bytes / kLine), size(lines * kLine) {
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("cannot map " + std::to_string(size) + " bytes");
    ::madvise(p, size, MADV_HUGEPAGE);
    base = static_cast<char*>(p);
    std::vector<uint32_t> order(lines);
    for (size_t i = 0; i < lines; ++i) order[i] = static_cast<uint32_t>(i);
    std::shuffle(order.begin(), order.end(), std::mt19937_64(42));
    for (size_t i = 0; i < lines; ++i) {
      const uint64_t next = uint64_t(order[(i + 1) % lines]) * kLine;
      std::memcpy(base + size_t(order[i]) * kLine, &next, sizeof(next));
    }
    start = order;
  }
  ~Ring() { ::munmap(base, size); }
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  // Nanoseconds per load with k chains walking `loads` loads in all.
  double ns_per_load(size_t k, size_t loads) const {
    uint64_t at[kMaxChains];
    for (size_t c = 0; c < k; ++c) at[c] = uint64_t(start[c * (lines / k)]) * kLine;
    const size_t rounds = loads / k;
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t r = 0; r < rounds; ++r) {
      for (size_t c = 0; c < k; ++c) std::memcpy(&at[c], base + at[c], sizeof(uint64_t));
      asm volatile("" : : "r"(at) : "memory");  // the walk stays between the two clock reads
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return s * 1e9 / double(rounds * k);
  }

  size_t lines, size;
  char* base = nullptr;
  std::vector<uint32_t> start;
};

bool parse_counts(const char* text, std::vector<size_t>* out) {
  out->clear();
  std::string s(text);
  size_t from = 0;
  while (from <= s.size()) {
    const size_t comma = std::min(s.find(',', from), s.size());
    const std::string item = s.substr(from, comma - from);
    char* end = nullptr;
    const unsigned long long v = std::strtoull(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v == 0 || v > kMaxChains) return false;
    out->push_back(size_t(v));
    from = comma + 1;
  }
  return !out->empty();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace shoal::bench;
  std::vector<size_t> sizes = {size_t(1) << 20, size_t(16) << 20, size_t(1) << 30, size_t(4) << 30};
  std::vector<size_t> chains = {1, 2, 4, 8, 16};
  size_t loads = 20000000;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--bytes" && has_value && parse_sizes(argv[i + 1], &sizes)) {
      ++i;
    } else if (a == "--chains" && has_value && parse_counts(argv[i + 1], &chains)) {
      ++i;
    } else if (a == "--loads" && has_value && std::strtoull(argv[i + 1], nullptr, 10) >= 1000) {
      loads = std::strtoull(argv[++i], nullptr, 10);
    } else {
      const bool help = a == "--help" || a == "-h";
      std::fprintf(help ? stdout : stderr,
                   "usage: shoal-bench-memory-latency [--bytes LIST] [--chains LIST] [--loads N]\n"
                   "  --bytes   buffer sizes, comma separated, K/M/G suffixes (default 1M,16M,1G,4G)\n"
                   "  --chains  independent chains walked at once, 1..%zu (default 1,2,4,8,16)\n"
                   "  --loads   loads per measurement, at least 1000 (default 20000000)\n"
                   "prints ns_per_load for each size and chain count, and a memcpy baseline, as JSON lines\n",
                   kMaxChains);
      return help ? 0 : 2;
    }
  }
  try {
    const size_t largest = *std::max_element(sizes.begin(), sizes.end());
    const double mc = median(memcpy_seconds(largest, 3));
    std::printf("{\"bench\":\"memory_latency\",\"baseline\":\"memcpy\",\"bytes\":%zu,\"memcpy_gbps\":%.3f}\n", largest,
                gbps(largest, mc));
    for (size_t bytes : sizes) {
      const Ring ring(bytes);
      ring.ns_per_load(1, std::min<size_t>(loads, ring.lines));  // first touch and warm-up
      for (size_t k : chains) {
        std::printf("{\"bench\":\"memory_latency\",\"bytes\":%zu,\"chains\":%zu,\"loads\":%zu,\"ns_per_load\":%.1f}\n",
                    ring.size, k, loads, ring.ns_per_load(k, loads));
        std::fflush(stdout);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shoal-bench-memory-latency: %s\n", e.what());
    return 1;
  }
  return 0;
}

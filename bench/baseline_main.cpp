// shoal-bench-baseline: prints the memcpy and loopback-TCP baselines as JSON lines.
//   shoal-bench-baseline [--bytes N] [--runs R]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "baseline_measure.hpp"

int main(int argc, char** argv) {
  size_t bytes = size_t(256) << 20;
  int runs = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--bytes" || a == "--runs") && i + 1 < argc) {
      char* end = nullptr;
      const unsigned long long v = std::strtoull(argv[++i], &end, 10);
      if (*end != '\0' || v == 0) {
        std::fprintf(stderr, "shoal-bench-baseline: %s needs a positive whole number\n", a.c_str());
        return 2;
      }
      if (a == "--bytes") bytes = size_t(v);
      else runs = int(v);
    } else {
      std::fprintf(stderr, "usage: shoal-bench-baseline [--bytes N] [--runs R]\n"
                           "prints memcpy_gbps and tcp_loopback_gbps (decimal GB/s, medians of R runs) as JSON lines\n");
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }
  try {
    using namespace shoal::bench;
    const auto mc = memcpy_seconds(bytes, runs);
    std::printf("{\"bench\":\"baseline\",\"bytes\":%zu,\"runs\":%d,\"memcpy_s\":%.6f,\"memcpy_gbps\":%.3f}\n", bytes,
                runs, median(mc), gbps(bytes, median(mc)));
    const auto tcp = tcp_loopback_seconds(bytes, runs);
    std::printf("{\"bench\":\"baseline\",\"bytes\":%zu,\"runs\":%d,\"tcp_s\":%.6f,\"tcp_loopback_gbps\":%.3f}\n", bytes,
                runs, median(tcp), gbps(bytes, median(tcp)));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shoal-bench-baseline: %s\n", e.what());
    return 1;
  }
  return 0;
}

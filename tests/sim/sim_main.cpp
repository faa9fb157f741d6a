// shoal-sim: runs one simulator scenario and prints its JSON line (see --help).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include <sys/resource.h>
#include <unistd.h>

#include "base/log.hpp"
#include "sim_args.hpp"

namespace {

// At thousands of members the cores' tables fill gigabytes that are read at random, and on 4 KiB
// pages half of the setup is page faults. glibc reads its allocator tunables only at start, so
// unless the caller chose some, shoal-sim runs itself again with these: the heap grows in 64 MiB
// steps marked for transparent huge pages, and blocks under 32 MiB come from the heap rather than
// from their own mappings (which would be too small for huge pages). The run is the same; at
// 10,000 members the setup takes about half as long.
void use_huge_pages(char** argv) {
  if (std::getenv("GLIBC_TUNABLES") != nullptr) return;
  if (::setenv("GLIBC_TUNABLES",
               "glibc.malloc.hugetlb=1:glibc.malloc.top_pad=67108864:glibc.malloc.mmap_threshold=33554432", 1) != 0) {
    return;
  }
  // The program's own path rather than /proc/self/exe, so that the process keeps its name.
  char self[4096];
  const ssize_t len = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (len > 0) {
    self[len] = '\0';
    ::execv(self, argv);
  }
  ::unsetenv("GLIBC_TUNABLES");  // could not run itself again: go on as it is
}

}  // namespace

int main(int argc, char** argv) {
  using namespace shoal::sim;
  use_huge_pages(argv);
  std::vector<std::string> args(argv + 1, argv + argc);
  auto cmd = parse_sim_args(args);
  if (!cmd) {
    std::cerr << "shoal-sim: " << cmd.error().message << "\n";
    return 2;
  }
  if (cmd->help) {
    std::cout << sim_help();
    return 0;
  }
  // Thousands of simulated members would each log every view they install: warnings only, unless
  // SHOAL_LOG asks for more.
  if (std::getenv("SHOAL_LOG") == nullptr) {
    if (auto spec = shoal::log::parse_spec("warn")) shoal::log::setup(*spec);
  }
  const ScenarioInputs& in = cmd->inputs;
  const auto t0 = std::chrono::steady_clock::now();
  ScenarioOutcome outcome = cmd->scenario->run(in);
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  JsonLine line;
  line.text("scenario", cmd->scenario->name);
  line.count("n", outcome.n.value_or(in.n));
  line.count("seed", in.seed);
  line.count("runs", in.runs);
  line.number("virtual_s", outcome.virtual_s);
  line.number("wall_s", wall_s);
  // The most memory the process held at once (getrusage: the peak resident set, in KiB on Linux).
  rusage usage{};
  if (::getrusage(RUSAGE_SELF, &usage) == 0) line.count("peak_rss_bytes", static_cast<uint64_t>(usage.ru_maxrss) * 1024);
  char hash[17];
  std::snprintf(hash, sizeof(hash), "%016llx", static_cast<unsigned long long>(outcome.trace_hash));
  line.text("trace_hash", hash);
  line.number("delay_ms", in.delay_ms);
  line.number("jitter_ms", in.jitter_ms);
  line.append(outcome.figures);
  if (outcome.error) line.text("error", *outcome.error);
  std::cout << line.str() << std::endl;
  return outcome.error ? 1 : 0;
}

// A separate process for the crash tests: saves a checkpoint of a rank (and exits, or keeps writing
// until it is killed mid-save), or reads the newest version back and checks its bytes.
//
//   ckpt_save_helper commit JOB RANK STEP BYTES   prints "committed STEP"
//   ckpt_save_helper hang   JOB RANK STEP BYTES   prints "writing STEP", then rewrites forever
//   ckpt_save_helper read   JOB RANK              prints "newest STEP intact|damaged" or "none"
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ckpt_pattern.hpp"
#include "ckpt_shm/rank_store.hpp"

using namespace shoal::ckpt;

namespace {

std::vector<BufferSpec> buffers_of(uint64_t bytes) { return {{"weights", bytes}, {"optimizer", bytes / 2}}; }

int usage() {
  std::fprintf(stderr, "usage: ckpt_save_helper commit|hang JOB RANK STEP BYTES | read JOB RANK\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) return usage();
  const std::string mode = argv[1];
  auto store = RankStore::open(RankStoreConfig{argv[2], static_cast<uint32_t>(std::strtoul(argv[3], nullptr, 10))});
  if (!store) {
    std::fprintf(stderr, "%s\n", store.error().message.c_str());
    return 1;
  }
  if (mode == "read") {
    auto v = store->newest_sealed();
    if (!v) {
      std::printf("none\n");
      return 0;
    }
    bool intact = true;
    for (size_t i = 0; i < v->buffers.size(); ++i) {
      intact = intact && test::has_pattern(v->buffers[i].bytes, v->step, i);
    }
    std::printf("newest %llu %s\n", static_cast<unsigned long long>(v->step), intact ? "intact" : "damaged");
    return 0;
  }
  if (argc != 6 || (mode != "commit" && mode != "hang")) return usage();
  const uint64_t step = std::strtoull(argv[4], nullptr, 10);
  const auto buffers = buffers_of(std::strtoull(argv[5], nullptr, 10));
  auto spans = store->begin_save(step, buffers);
  if (!spans) {
    std::fprintf(stderr, "%s\n", spans.error().message.c_str());
    return 1;
  }
  if (mode == "hang") {
    // Half of the first buffer, then the signal to the test, then a writer that never finishes, so
    // that SIGKILL lands in the middle of memory writes.
    auto first = (*spans)[0].bytes;
    test::fill_pattern(first.first(first.size() / 2), step, 0);
    std::printf("writing %llu\n", static_cast<unsigned long long>(step));
    std::fflush(stdout);
    for (uint64_t round = 1;; ++round) {
      for (size_t i = 0; i < spans->size(); ++i) test::fill_pattern((*spans)[i].bytes, step + round, i);
    }
  }
  for (size_t i = 0; i < spans->size(); ++i) test::fill_pattern((*spans)[i].bytes, step, i);
  auto v = store->commit();
  if (!v) {
    std::fprintf(stderr, "%s\n", v.error().message.c_str());
    return 1;
  }
  std::printf("committed %llu\n", static_cast<unsigned long long>(step));
  return 0;
}

// Real processes: a checkpoint outlives the process that wrote it, and a writer killed with SIGKILL
// in the middle of a save leaves the previous version intact for every other process.
#include <doctest/doctest.h>
#include <signal.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "../support/process.hpp"
#include "ckpt_pattern.hpp"
#include "ckpt_shm/rank_store.hpp"
#include "shm_test_job.hpp"

using namespace std::chrono_literals;
using shoal::ckpt::RankStore;
using shoal::ckpt::RankStoreConfig;
using shoal::ckpt::test::ShmTestJob;
using shoal::test::ChildProcess;
using shoal::test::TempDir;

namespace {

constexpr const char* kHelper = CKPT_SAVE_HELPER;
constexpr const char* kBytes = "3000000";  // large enough that a kill lands mid-write

// Runs the helper to completion and returns its one line of output.
std::string run_helper(const TempDir& dir, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {kHelper};
  argv.insert(argv.end(), args.begin(), args.end());
  ChildProcess child(argv, dir.path() + "/helper.err");
  auto line = child.read_line(20s);
  const auto code = child.wait_exit(20s);
  REQUIRE(code.has_value());
  CHECK(*code == 0);
  return line.value_or("<no output>");
}

}  // namespace

TEST_CASE("a version committed by one process is read intact by another after the writer has exited") {
  TempDir dir;
  ShmTestJob job("crash");
  CHECK(run_helper(dir, {"commit", job.name(), "4", "7", kBytes}) == "committed 7");
  CHECK(run_helper(dir, {"read", job.name(), "4"}) == "newest 7 intact");
  auto store = RankStore::open(RankStoreConfig{job.name(), 4});
  REQUIRE(store.ok());
  auto v = store->newest_sealed();
  REQUIRE(v.has_value());
  CHECK(v->step == 7);
  CHECK(shoal::ckpt::test::has_pattern(v->buffers[0].bytes, 7, 0));
  REQUIRE(RankStore::remove_segments(job.name(), 4).ok());
  CHECK(job.leftovers().empty());
}

TEST_CASE(
    "a writer killed with SIGKILL in the middle of a save leaves the previous version intact for other processes") {
  TempDir dir;
  ShmTestJob job("crash");
  REQUIRE(run_helper(dir, {"commit", job.name(), "0", "1", kBytes}) == "committed 1");
  REQUIRE(run_helper(dir, {"commit", job.name(), "0", "2", kBytes}) == "committed 2");
  // The third save goes into step 1's slot; kill the writer while it is filling it.
  {
    ChildProcess writer({kHelper, "hang", job.name(), "0", "3", kBytes}, dir.path() + "/writer.err");
    REQUIRE(writer.read_line(20s) == std::optional<std::string>("writing 3"));
    std::this_thread::sleep_for(50ms);
    writer.send_signal(SIGKILL);
    CHECK(writer.wait_exit(10s) == std::optional<int>(128 + SIGKILL));
  }
  CHECK(run_helper(dir, {"read", job.name(), "0"}) == "newest 2 intact");
  auto store = RankStore::open(RankStoreConfig{job.name(), 0});
  REQUIRE(store.ok());
  int unsealed = 0;
  for (const auto& r : store->inspect()) {
    if (!r.version.ok() && r.version.error().cause == shoal::ckpt::LayoutCause::unsealed) ++unsealed;
  }
  CHECK(unsealed == 1);
  // The next writer reuses the torn slot and keeps step 2.
  CHECK(run_helper(dir, {"commit", job.name(), "0", "4", kBytes}) == "committed 4");
  CHECK(run_helper(dir, {"read", job.name(), "0"}) == "newest 4 intact");
  REQUIRE(RankStore::remove_segments(job.name(), 0).ok());
  CHECK(job.leftovers().empty());
}

TEST_CASE("a writer killed before its first commit leaves no version, and nothing is returned") {
  TempDir dir;
  ShmTestJob job("crash");
  {
    ChildProcess writer({kHelper, "hang", job.name(), "2", "1", kBytes}, dir.path() + "/writer.err");
    REQUIRE(writer.read_line(20s) == std::optional<std::string>("writing 1"));
    writer.kill_and_reap();
  }
  CHECK(run_helper(dir, {"read", job.name(), "2"}) == "none");
  CHECK(job.leftovers().size() == 1);
  REQUIRE(RankStore::remove_segments(job.name(), 2).ok());
  CHECK(job.leftovers().empty());
}

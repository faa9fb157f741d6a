// What the PersistDir tests share: a private temporary directory, and sealed versions made in memory.
#pragma once

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <vector>

#include "ckpt_pattern.hpp"
#include "ckpt_shm/version_layout.hpp"

namespace shoal::ckpt::test {

inline const std::vector<BufferSpec> kBuffers = {{"weights", 30000}, {"optimizer", 9000}};
// Each test case has a directory of its own, so the job name need not be unique.
inline const std::string kJob = "persist-job";

// A fresh directory under the system's temporary directory, mode 0700 whatever the umask (a persist
// directory must be writable by its owner alone), removed when the test case ends (also when it fails).
class TempDir {
 public:
  explicit TempDir(const std::string& tag) {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("shoal-persist-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" + tag);
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
    ::chmod(path_.c_str(), 0700);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string str() const { return path_.string(); }
  std::filesystem::path job_dir() const { return path_ / kJob; }

 private:
  std::filesystem::path path_;
};

// A sealed version of (job, rank, step) in memory, its buffers filled with the test pattern.
inline std::vector<std::byte> make_version(const std::string& job, uint32_t rank, uint64_t step, uint64_t sequence = 0,
                                           const std::vector<BufferSpec>& buffers = kBuffers, bool seal = true) {
  auto plan = plan_layout(buffers);
  REQUIRE(plan.ok());
  std::vector<std::byte> bytes(plan->total_bytes);
  VersionIdentity id{job, rank, step, sequence == 0 ? step + 1 : sequence, 8};
  REQUIRE(begin_version(bytes, id, buffers, *plan).ok());
  for (size_t i = 0; i < buffers.size(); ++i) {
    fill_pattern(std::span(bytes).subspan(plan->offsets[i], buffers[i].bytes), step, i);
  }
  if (seal) REQUIRE(seal_version(bytes).ok());
  return bytes;
}

}  // namespace shoal::ckpt::test

// Test support for ckpt: a job name unique to this process and test (so parallel runs never share
// a segment), and the removal of every segment of that job, also when a test fails.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "ckpt_shm/shm_segment.hpp"

namespace shoal::ckpt::test {

class ShmTestJob {
 public:
  explicit ShmTestJob(const std::string& tag) {
    static std::atomic<int> counter{0};
    name_ = "t" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" + tag;
  }
  ~ShmTestJob() { remove_all(); }
  ShmTestJob(const ShmTestJob&) = delete;
  ShmTestJob& operator=(const ShmTestJob&) = delete;

  const std::string& name() const { return name_; }

  // The segments of this job in /dev/shm, by file name ("shoal.<job>.r0.v1").
  std::vector<std::string> leftovers() const {
    std::vector<std::string> out;
    const std::string prefix = "shoal." + name_ + ".";
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/dev/shm", ec)) {
      const std::string file = e.path().filename().string();
      if (file.rfind(prefix, 0) == 0) out.push_back(file);
    }
    return out;
  }

  // Unlinks every segment of the job and returns how many it found.
  size_t remove_all() const {
    const auto found = leftovers();
    for (const auto& file : found) (void)ShmSegment::unlink("/" + file);
    return found.size();
  }

 private:
  std::string name_;
};

}  // namespace shoal::ckpt::test

// A CPU quota for one process in a test: a cgroup of its own (v1 `cpu.cfs_quota_us`, or v2 `cpu.max`) that the
// process is moved into, removed (the process moved back first) when the object goes. For tests that need one
// slow host among equal ones; supported() says why not where there is no cgroup cpu controller to write.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

namespace shoal::test {

class CpuQuota {
 public:
  // `percent` of one CPU, in periods of 100 ms.
  explicit CpuQuota(const std::string& name, int percent) {
    namespace fs = std::filesystem;
    if (fs::exists("/sys/fs/cgroup/cpu/cpu.cfs_quota_us")) {
      root_ = "/sys/fs/cgroup/cpu", v2_ = false;
    } else if (std::ifstream f("/sys/fs/cgroup/cgroup.subtree_control"); f) {
      std::string controllers((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      if (controllers.find("cpu") == std::string::npos) return;
      root_ = "/sys/fs/cgroup", v2_ = true;
    } else {
      return;
    }
    path_ = root_ + "/" + name + "-" + std::to_string(::getpid());
    std::error_code ec;
    if (!fs::create_directory(path_, ec)) {
      path_.clear();
      return;
    }
    const int quota_us = percent * 1000;
    ok_ = v2_ ? write(path_ + "/cpu.max", std::to_string(quota_us) + " 100000")
              : write(path_ + "/cpu.cfs_period_us", "100000") &&
                    write(path_ + "/cpu.cfs_quota_us", std::to_string(quota_us));
  }
  CpuQuota(const CpuQuota&) = delete;
  CpuQuota& operator=(const CpuQuota&) = delete;
  ~CpuQuota() {
    if (path_.empty()) return;
    for (const pid_t pid : moved_) write(root_ + "/cgroup.procs", std::to_string(pid));  // if it still runs
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }

  bool supported() const { return ok_; }
  // Moves process `pid` (all its threads) into the quota.
  bool add(pid_t pid) {
    if (!ok_ || !write(path_ + "/cgroup.procs", std::to_string(pid))) return false;
    moved_.push_back(pid);
    return true;
  }

 private:
  static bool write(const std::string& file, const std::string& value) {
    std::ofstream f(file);
    f << value << "\n";
    f.flush();
    return static_cast<bool>(f);
  }

  std::string root_, path_;
  bool v2_ = false;
  bool ok_ = false;
  std::vector<pid_t> moved_;
};

}  // namespace shoal::test

// `shoal ckpt gc`: the segments a crashed job left in /dev/shm, listed and (with --yes) removed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace shoal::cli {

struct GcOptions {
  std::string dir = "/dev/shm";
  std::vector<std::string> controls;  // more agents' sockets to ask, beyond the default directories
  int64_t min_age_s = 60;
  bool yes = false;
  bool json = false;
};

int gc_command(const GcOptions& opt);

}  // namespace shoal::cli

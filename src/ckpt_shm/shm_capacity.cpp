// The default checkpoint budget, from the size of the filesystem behind /dev/shm.
#include "ckpt_shm/shm_capacity.hpp"

#include <sys/statvfs.h>

namespace shoal::ckpt {

uint64_t default_budget_bytes(const std::string& dir, uint32_t percent) {
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) != 0) return 0;
  const uint64_t total = static_cast<uint64_t>(fs.f_blocks) * fs.f_frsize;
  // Divide first: a tmpfs of many terabytes times 100 still fits in 64 bits this way.
  return total / 100 * percent;
}

}  // namespace shoal::ckpt

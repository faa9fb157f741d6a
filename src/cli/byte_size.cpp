// One formatter of byte counts for every table the CLI prints.
#include "cli/byte_size.hpp"

#include <cinttypes>
#include <cstdio>

namespace shoal::cli {

std::string human_bytes(uint64_t bytes) {
  char out[32];
  if (bytes >= (uint64_t{1} << 30)) {
    std::snprintf(out, sizeof out, "%.2f GiB", static_cast<double>(bytes) / static_cast<double>(uint64_t{1} << 30));
  } else if (bytes >= (uint64_t{1} << 20)) {
    std::snprintf(out, sizeof out, "%.1f MiB", static_cast<double>(bytes) / static_cast<double>(uint64_t{1} << 20));
  } else {
    std::snprintf(out, sizeof out, "%" PRIu64 " B", bytes);
  }
  return out;
}

}  // namespace shoal::cli

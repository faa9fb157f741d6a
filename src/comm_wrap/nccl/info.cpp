// NCCL's version, asked of the library itself (works without a GPU).
#include <nccl.h>

#include "comm_wrap/backends.hpp"

namespace shoal::comm {

std::string nccl_version() {
  int code = 0;
  if (ncclGetVersion(&code) != ncclSuccess) return "unknown";
  // NCCL >= 2.9 encodes major*10000 + minor*100 + patch.
  return std::to_string(code / 10000) + "." + std::to_string((code % 10000) / 100) + "." + std::to_string(code % 100);
}

}  // namespace shoal::comm

// Built instead of nccl/info.cpp when NCCL was not found at configure time.
#include "comm_wrap/backends.hpp"

namespace shoal::comm {

std::string nccl_version() { return "no"; }

}  // namespace shoal::comm

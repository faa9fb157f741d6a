// Which collective backends this build carries.
#pragma once

#include <string>

namespace shoal::comm {

bool gloo_compiled_in();
// The NCCL library's version as "2.28.9", or "no" when shoal was built without NCCL.
std::string nccl_version();

}  // namespace shoal::comm

// The gpu suite's skip: a test exits 77, which meson counts as a skip, where this process sees no GPU
// or the build has no CUDA.
#pragma once

#include <cstdio>

#ifdef SHOAL_HAVE_NCCL
#include <cuda_runtime_api.h>
#endif

namespace shoal::test {

// Meson's exit code for "skipped".
inline constexpr int kSkipped = 77;

// Says why the test is skipped; main() returns what this returns.
inline int skip(const char* why) {
  std::printf("%s: skipping\n", why);
  return kSkipped;
}

#ifdef SHOAL_HAVE_NCCL
// The number of GPUs this process sees; 0, after saying why, when there is none or CUDA cannot tell
// (main() then returns kSkipped).
inline int visible_gpus() {
  int devices = 0;
  const cudaError_t err = cudaGetDeviceCount(&devices);
  if (err != cudaSuccess || devices == 0) {
    std::printf("no GPU here (cudaGetDeviceCount: %s, %d devices): skipping\n", cudaGetErrorString(err), devices);
    return 0;
  }
  return devices;
}
#endif

}  // namespace shoal::test

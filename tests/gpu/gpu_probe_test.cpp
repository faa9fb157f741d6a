// The gpu suite's first test: with a GPU, a one-rank NCCL allreduce on the device gives the right
// answer; without a GPU (or without NCCL in this build) it exits 77, which meson counts as a skip.
#include <cstdio>

#include "gpu_skip.hpp"

#ifdef SHOAL_HAVE_NCCL
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <vector>

int main() {
  const int devices = shoal::test::visible_gpus();
  if (devices == 0) return shoal::test::kSkipped;
  ncclComm_t comm;
  int dev = 0;
  if (ncclCommInitAll(&comm, 1, &dev) != ncclSuccess) {
    std::printf("ncclCommInitAll failed\n");
    return 1;
  }
  constexpr int n = 1 << 20;
  std::vector<float> host(n, 2.5f);
  float* buf = nullptr;
  cudaMalloc(&buf, n * sizeof(float));
  cudaMemcpy(buf, host.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  const ncclResult_t r = ncclAllReduce(buf, buf, n, ncclFloat, ncclSum, comm, stream);
  cudaStreamSynchronize(stream);
  cudaMemcpy(host.data(), buf, n * sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(buf);
  cudaStreamDestroy(stream);
  ncclCommDestroy(comm);
  if (r != ncclSuccess || host[0] != 2.5f || host[n - 1] != 2.5f) {
    std::printf("allreduce wrong: %s %f\n", ncclGetErrorString(r), double(host[0]));
    return 1;
  }
  std::printf("one-rank NCCL allreduce on %d device(s): ok\n", devices);
  return 0;
}
#else
int main() { return shoal::test::skip("built without NCCL"); }
#endif

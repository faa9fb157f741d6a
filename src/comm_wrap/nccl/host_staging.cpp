// HostStaging: device buffers for host memory handed to the NCCL backend.
#include "comm_wrap/nccl/host_staging.hpp"

#include <cuda_runtime_api.h>

#include <string>

#include "shoal/errors.hpp"

namespace shoal::comm {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(std::string("nccl backend: ") + what + ": " + cudaGetErrorString(e));
}

}  // namespace

bool needs_staging(const void* p) {
  if (p == nullptr) return false;
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    (void)cudaGetLastError();  // an unknown pointer: clear the error it left, and treat it as host memory
    return true;
  }
  return attr.type != cudaMemoryTypeDevice && attr.type != cudaMemoryTypeManaged;
}

HostStaging::~HostStaging() {
  if (buf_ != nullptr) cudaFree(buf_);
}

void* HostStaging::reserve(size_t bytes) {
  if (bytes <= capacity_) return buf_;
  if (buf_ != nullptr) cudaFree(buf_);
  buf_ = nullptr;
  capacity_ = 0;
  const size_t want = bytes < 4096 ? 4096 : bytes;
  check(cudaMalloc(&buf_, want), "allocating the staging buffer for host memory");
  capacity_ = want;
  return buf_;
}

void HostStaging::copy_in(const void* host, size_t bytes) {
  if (bytes > 0) check(cudaMemcpy(buf_, host, bytes, cudaMemcpyHostToDevice), "copying host memory in");
}

void HostStaging::copy_out(void* host, size_t bytes) const {
  if (bytes > 0) check(cudaMemcpy(host, buf_, bytes, cudaMemcpyDeviceToHost), "copying the result out");
}

}  // namespace shoal::comm

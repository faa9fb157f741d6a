// device_copy over the CUDA runtime API (libcudart). No kernels: only registration and copies.
#include <cuda_runtime_api.h>

#include <string>

#include "base/log.hpp"
#include "ckpt_shm/device_copy.hpp"

namespace shoal::ckpt::device {
namespace {

Status cuda_failed(const char* what, cudaError_t err) {
  return fail(std::string(what) + " failed: " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
}

cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }

}  // namespace

bool compiled() { return true; }

Status pin(void* data, size_t bytes) {
  const cudaError_t err = cudaHostRegister(data, bytes, cudaHostRegisterPortable);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();  // reset the last error, so a later call does not report this one
    return cuda_failed("cudaHostRegister", err);
  }
  return Ok{};
}

void unpin(void* data) {
  const cudaError_t err = cudaHostUnregister(data);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    log::get(log::Component::ckpt)
        .warn("ckpt: cudaHostUnregister failed: {} ({})", cudaGetErrorName(err), cudaGetErrorString(err));
  }
}

Status copy_to_host_async(std::span<std::byte> dst, const void* device_src, void* stream) {
  if (dst.empty()) return Ok{};
  const cudaError_t err =
      cudaMemcpyAsync(dst.data(), device_src, dst.size(), cudaMemcpyDeviceToHost, as_stream(stream));
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return cuda_failed("cudaMemcpyAsync (device to host)", err);
  }
  return Ok{};
}

Status synchronize(void* stream) {
  const cudaError_t err = cudaStreamSynchronize(as_stream(stream));
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return cuda_failed("cudaStreamSynchronize", err);
  }
  return Ok{};
}

bool is_device_pointer(const void* p) {
  cudaPointerAttributes attrs{};
  const cudaError_t err = cudaPointerGetAttributes(&attrs, p);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return attrs.type == cudaMemoryTypeDevice || attrs.type == cudaMemoryTypeManaged;
}

}  // namespace shoal::ckpt::device

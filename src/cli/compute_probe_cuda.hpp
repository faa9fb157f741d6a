// The pre-flight check's GPU compute probe: cuBLAS sgemm on the host's first GPU, loaded at run time
// (dlopen of libcudart.so.13 and libcublas.so.13, the CUDA 13 runtime shoal builds against), so the
// `shoal` program needs neither to start and a host without a GPU or without CUDA falls back to OpenBLAS.
#pragma once

#include <cstdint>

#include "daemon/check/compute_probe.hpp"

namespace shoal::cli {

// kCudaMatrixN x kCudaMatrixN fp32 matrices, kCudaRuns timed multiplies after one warm-up, best run.
inline constexpr uint32_t kCudaMatrixN = 4096;
inline constexpr int kCudaRuns = 5;

// Whether this host has a GPU that the CUDA runtime and cuBLAS can use (loads them once).
bool cuda_probe_available();
// The cuBLAS probe (backend "cublas"); its result is an error when CUDA fails along the way.
daemon::check::ComputeProbe cuda_compute_probe();
// The probe the `shoal` program hands its agent: cuBLAS where a GPU is usable, else OpenBLAS's (decided at
// the first probe, so that an agent's start never loads CUDA).
daemon::check::ComputeProbe host_compute_probe();

}  // namespace shoal::cli

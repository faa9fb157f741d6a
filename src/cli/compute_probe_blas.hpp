// The compute probe that `shoal agent` hands its agent for the pre-flight check: single-precision matrix
// multiplies with OpenBLAS (Debian's libopenblas) on one core.
#pragma once

#include "daemon/check/compute_probe.hpp"

namespace shoal::cli {

// Multiplies two fixed kBlasMatrixN x kBlasMatrixN matrices kBlasRuns times on one core (OpenBLAS's threads set
// to 1, so hosts compare core for core whatever their core count) and answers the best run's GFLOP/s. About
// 0.1 s a run on a 2020s x86 core.
inline constexpr uint32_t kBlasMatrixN = 1536;
inline constexpr int kBlasRuns = 3;
daemon::check::ComputeProbe blas_compute_probe();

}  // namespace shoal::cli

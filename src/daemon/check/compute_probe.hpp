// The compute probe of the pre-flight check, as the agent sees it: a blocking call that runs a fixed
// amount of arithmetic and says how fast it went. The agent runs it on a thread of its own and never
// implements it: the `shoal` program hands in OpenBLAS's (src/cli/compute_probe_blas.cpp), so that
// libshoal.so, which trainers link next to their own BLAS, carries none. An agent without one (embedded in a
// trainer) answers that it has no compute probe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "base/result.hpp"

namespace shoal::daemon::check {

struct ComputeFigure {
  double gflops = 0;      // the best of its runs
  uint32_t matrix_n = 0;  // the size of the square matrices multiplied
  std::string backend;    // "openblas", "cublas"
};

using ComputeProbe = std::function<Result<ComputeFigure>()>;

}  // namespace shoal::daemon::check

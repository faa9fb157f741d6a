// The OpenBLAS compute probe: sgemm on fixed matrices, timed with the steady clock.
#include "cli/compute_probe_blas.hpp"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>
#include <vector>

namespace shoal::cli {

daemon::check::ComputeProbe blas_compute_probe() {
  return []() -> Result<daemon::check::ComputeFigure> {
    // OpenBLAS's thread count is process-wide: set once (the agent runs one probe at a time).
    static std::once_flag once;
    std::call_once(once, [] { openblas_set_num_threads(1); });
    const size_t n = kBlasMatrixN;
    std::vector<float> a(n * n), b(n * n), c(n * n, 0.0f);
    for (size_t i = 0; i < n * n; ++i) {
      a[i] = static_cast<float>(i % 7) * 0.125f;
      b[i] = static_cast<float>(i % 5) * 0.25f;
    }
    double best_s = 0;
    for (int run = 0; run < kBlasRuns; ++run) {
      const auto start = std::chrono::steady_clock::now();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(n), static_cast<int>(n),
                  static_cast<int>(n), 1.0f, a.data(), static_cast<int>(n), b.data(), static_cast<int>(n), 0.0f,
                  c.data(), static_cast<int>(n));
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (run == 0 || s < best_s) best_s = s;
    }
    // c[0] = sum over k of a[k] * b[k * n]: a check that the library computed at all.
    double expect = 0;
    for (size_t k = 0; k < n; ++k) expect += double(a[k]) * double(b[k * n]);
    if (best_s <= 0 || std::abs(double(c[0]) - expect) > 1e-3 * std::max(1.0, std::abs(expect))) {
      return fail("the matrix multiply gave a wrong result");
    }
    const double flops = 2.0 * double(n) * double(n) * double(n);
    return daemon::check::ComputeFigure{flops / best_s / 1e9, kBlasMatrixN, "openblas"};
  };
}

}  // namespace shoal::cli

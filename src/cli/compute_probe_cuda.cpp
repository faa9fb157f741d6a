// The cuBLAS compute probe through dlopen: only the few C entry points it needs, declared here with the
// CUDA 13 ABI (cudaMemcpyKind and cublasOperation_t values are part of that ABI).
#include "cli/compute_probe_cuda.hpp"

#include <dlfcn.h>

#include <chrono>
#include <cmath>
#include <mutex>
#include <string>
#include <vector>

#include "cli/compute_probe_blas.hpp"

namespace shoal::cli {
namespace {

constexpr int kMemcpyHostToDevice = 1;
constexpr int kMemcpyDeviceToHost = 2;
constexpr int kCublasOpN = 0;

struct CudaApi {
  int (*get_device_count)(int*) = nullptr;
  int (*malloc)(void**, size_t) = nullptr;
  int (*free)(void*) = nullptr;
  int (*memcpy)(void*, const void*, size_t, int) = nullptr;
  int (*synchronize)() = nullptr;
  int (*create)(void**) = nullptr;
  int (*destroy)(void*) = nullptr;
  int (*sgemm)(void*, int, int, int, int, int, const float*, const float*, int, const float*, int, const float*,
               float*, int) = nullptr;
  std::string why;  // empty: usable
};

template <class F>
bool bind(void* lib, const char* name, F& out) {
  out = reinterpret_cast<F>(::dlsym(lib, name));
  return out != nullptr;
}

const CudaApi& api() {
  static const CudaApi loaded = [] {
    CudaApi a;
    void* rt = ::dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL);
    void* blas = rt ? ::dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL) : nullptr;
    if (!rt || !blas) {
      a.why = std::string("CUDA 13 runtime or cuBLAS not found: ") + ::dlerror();
      return a;
    }
    const bool ok = bind(rt, "cudaGetDeviceCount", a.get_device_count) && bind(rt, "cudaMalloc", a.malloc) &&
                    bind(rt, "cudaFree", a.free) && bind(rt, "cudaMemcpy", a.memcpy) &&
                    bind(rt, "cudaDeviceSynchronize", a.synchronize) && bind(blas, "cublasCreate_v2", a.create) &&
                    bind(blas, "cublasDestroy_v2", a.destroy) && bind(blas, "cublasSgemm_v2", a.sgemm);
    if (!ok) {
      a.why = "the CUDA runtime or cuBLAS lacks an entry point the probe needs";
      return a;
    }
    int devices = 0;
    if (a.get_device_count(&devices) != 0 || devices == 0) a.why = "no GPU";
    return a;
  }();
  return loaded;
}

// Frees what it holds whatever happens.
struct DeviceBuffers {
  const CudaApi& cuda;
  std::vector<void*> ptrs;
  void* handle = nullptr;
  ~DeviceBuffers() {
    for (void* p : ptrs) cuda.free(p);
    if (handle != nullptr) cuda.destroy(handle);
  }
};

}  // namespace

bool cuda_probe_available() { return api().why.empty(); }

daemon::check::ComputeProbe cuda_compute_probe() {
  return []() -> Result<daemon::check::ComputeFigure> {
    const CudaApi& cuda = api();
    if (!cuda.why.empty()) return fail(cuda.why);
    const int n = static_cast<int>(kCudaMatrixN);
    const size_t count = size_t(n) * size_t(n);
    std::vector<float> a(count), b(count), c(count, 0.0f);
    for (size_t i = 0; i < count; ++i) {
      a[i] = static_cast<float>(i % 7) * 0.125f;
      b[i] = static_cast<float>(i % 5) * 0.25f;
    }
    DeviceBuffers dev{cuda, {nullptr, nullptr, nullptr}};
    for (void*& p : dev.ptrs) {
      if (cuda.malloc(&p, count * sizeof(float)) != 0) return fail("cudaMalloc of the probe's matrices failed");
    }
    if (cuda.memcpy(dev.ptrs[0], a.data(), count * sizeof(float), kMemcpyHostToDevice) != 0 ||
        cuda.memcpy(dev.ptrs[1], b.data(), count * sizeof(float), kMemcpyHostToDevice) != 0) {
      return fail("copying the probe's matrices to the GPU failed");
    }
    if (cuda.create(&dev.handle) != 0) return fail("cublasCreate failed");
    const float one = 1.0f, zero = 0.0f;
    const auto* da = static_cast<const float*>(dev.ptrs[0]);
    const auto* db = static_cast<const float*>(dev.ptrs[1]);
    auto* dc = static_cast<float*>(dev.ptrs[2]);
    double best_s = 0;
    for (int run = -1; run < kCudaRuns; ++run) {  // run -1 warms up (kernel selection, clocks)
      const auto start = std::chrono::steady_clock::now();
      // Column-major C = A * B on the same bytes: what it computes is checked below.
      if (cuda.sgemm(dev.handle, kCublasOpN, kCublasOpN, n, n, n, &one, da, n, db, n, &zero, dc, n) != 0 ||
          cuda.synchronize() != 0) {
        return fail("cublasSgemm failed");
      }
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (run >= 0 && (best_s == 0 || s < best_s)) best_s = s;
    }
    if (cuda.memcpy(c.data(), dc, count * sizeof(float), kMemcpyDeviceToHost) != 0) {
      return fail("copying the product back failed");
    }
    // Column-major: c[0] = sum over k of a[k * n] * b[k].
    double expect = 0;
    for (size_t k = 0; k < size_t(n); ++k) expect += double(a[k * size_t(n)]) * double(b[k]);
    if (best_s <= 0 || std::abs(double(c[0]) - expect) > 1e-3 * std::max(1.0, std::abs(expect))) {
      return fail("the GPU's matrix multiply gave a wrong result");
    }
    const double flops = 2.0 * double(n) * double(n) * double(n);
    return daemon::check::ComputeFigure{flops / best_s / 1e9, kCudaMatrixN, "cublas"};
  };
}

daemon::check::ComputeProbe host_compute_probe() {
  // Decided at the first check, not when the agent starts: loading CUDA and cuBLAS (or finding out there
  // is no GPU) takes a second or more, which an agent's start must not pay (it delayed joins in tests).
  return [gpu = cuda_compute_probe(), cpu = blas_compute_probe()]() {
    return cuda_probe_available() ? gpu() : cpu();
  };
}

}  // namespace shoal::cli

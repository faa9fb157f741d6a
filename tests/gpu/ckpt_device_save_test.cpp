// The gpu suite's checkpoint test: with a GPU, a rank saves a device buffer through RankStore with
// cudaMemcpyAsync into its page-locked slot, and what reads back is byte-identical; an abandoned save
// with a copy in flight leaves the previous version intact. Prints one JSON line with the save time
// next to a plain pinned device-to-host copy of the same bytes. Without a GPU (or CUDA in this
// build) it exits 77, which meson counts as a skip.
#include <cstdio>

#include "gpu_skip.hpp"

#ifdef SHOAL_HAVE_NCCL
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "../ckpt_shm/ckpt_pattern.hpp"
#include "ckpt_shm/rank_store.hpp"

using namespace shoal::ckpt;
using shoal::ckpt::test::fill_pattern;
using shoal::ckpt::test::has_pattern;

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kBytes = size_t{256} << 20;
int failures = 0;

void expect(bool ok, const char* what) {
  if (!ok) {
    std::printf("FAILED: %s\n", what);
    ++failures;
  }
}

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// One save of `step`: the device buffer through copy_from_device, a small host buffer through write.
double save_step(RankStore& store, uint64_t step, const void* device, cudaStream_t stream) {
  const std::vector<BufferSpec> buffers = {{"params", kBytes}, {"meta", 4096}};
  std::vector<std::byte> meta(4096);
  fill_pattern(meta, step, 1);
  const auto t = Clock::now();
  auto spans = store.begin_save(step, buffers);
  expect(spans.ok(), "begin_save");
  if (!spans.ok()) return 0;
  auto copied = store.copy_from_device(0, device, stream);
  if (!copied.ok()) std::printf("copy_from_device: %s\n", copied.error().message.c_str());
  expect(copied.ok(), "copy_from_device");
  expect(store.write_buffer(1, meta).ok(), "write_buffer");
  auto sealed = store.commit();
  if (!sealed.ok()) std::printf("commit: %s\n", sealed.error().message.c_str());
  expect(sealed.ok(), "commit");
  return since(t);
}

bool newest_is(RankStore& store, uint64_t step) {
  auto v = store.newest_sealed();
  return v && v->step == step && has_pattern(v->buffers[0].bytes, step, 0) && has_pattern(v->buffers[1].bytes, step, 1);
}

}  // namespace

int main() {
  if (shoal::test::visible_gpus() == 0) return shoal::test::kSkipped;
  const std::string job = "gpu-ckpt-" + std::to_string(::getpid());
  auto opened = RankStore::open(RankStoreConfig{job, 0, 2});
  if (!opened.ok()) {
    std::printf("RankStore::open: %s\n", opened.error().message.c_str());
    return 1;
  }
  RankStore& store = *opened;
  std::vector<std::byte> host(kBytes);
  void* device = nullptr;
  cudaStream_t stream{};
  expect(cudaMalloc(&device, kBytes) == cudaSuccess, "cudaMalloc");
  expect(cudaStreamCreate(&stream) == cudaSuccess, "cudaStreamCreate");

  fill_pattern(host, 1, 0);
  cudaMemcpy(device, host.data(), kBytes, cudaMemcpyHostToDevice);
  const double first_s = save_step(store, 1, device, stream);  // pins both slots' segments as it goes
  expect(newest_is(store, 1), "step 1 reads back byte-identical");

  fill_pattern(host, 2, 0);
  cudaMemcpy(device, host.data(), kBytes, cudaMemcpyHostToDevice);
  (void)save_step(store, 2, device, stream);  // the second slot's first save: pins it
  fill_pattern(host, 3, 0);
  cudaMemcpy(device, host.data(), kBytes, cudaMemcpyHostToDevice);
  const double pinned_save_s = save_step(store, 3, device, stream);
  expect(newest_is(store, 3), "step 3 reads back byte-identical");

  // A save abandoned with its device copy in flight: the previous version stays the newest.
  auto spans = store.begin_save(4, std::vector<BufferSpec>{{"params", kBytes}, {"meta", 4096}});
  expect(spans.ok(), "begin_save 4");
  expect(store.copy_from_device(0, device, stream).ok(), "copy_from_device 4");
  store.abandon();
  expect(newest_is(store, 3), "an abandoned save leaves step 3 the newest");

  // A host pointer is refused with a sentence, and the store stays usable.
  spans = store.begin_save(5, std::vector<BufferSpec>{{"params", kBytes}, {"meta", 4096}});
  auto refused = store.copy_from_device(0, host.data(), stream);
  expect(!refused.ok(), "a host pointer is refused");
  store.abandon();

  // The baseline: the same bytes copied device to host into memory from cudaMallocHost.
  void* pinned = nullptr;
  expect(cudaMallocHost(&pinned, kBytes) == cudaSuccess, "cudaMallocHost");
  cudaMemcpyAsync(pinned, device, kBytes, cudaMemcpyDeviceToHost, stream);  // warm
  cudaStreamSynchronize(stream);
  const auto t = Clock::now();
  cudaMemcpyAsync(pinned, device, kBytes, cudaMemcpyDeviceToHost, stream);
  cudaStreamSynchronize(stream);
  const double baseline_s = since(t);
  std::printf(
      "{\"test\":\"ckpt_device_save\",\"bytes\":%zu,\"first_save_s\":%.4f,\"save_s\":%.4f,\"pinned_d2h_s\":%.4f,"
      "\"save_vs_pinned_d2h\":%.2f}\n",
      kBytes, first_s, pinned_save_s, baseline_s, pinned_save_s / baseline_s);

  cudaFreeHost(pinned);
  cudaFree(device);
  cudaStreamDestroy(stream);
  (void)RankStore::remove_segments(job, 0);
  std::printf(failures == 0 ? "device saves: ok\n" : "device saves: %d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
#else
int main() { return shoal::test::skip("built without CUDA"); }
#endif

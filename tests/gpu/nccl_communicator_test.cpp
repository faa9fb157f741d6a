// The gpu suite's NCCL backend smoke test: on one GPU, a world-1 NcclCommunicator allreduces
// (f32 sum and avg, bf16), aborts (later collectives throw ViewChanged), and the aborted
// communicator is shrunk into the next epoch's, which works. Without a GPU, or without NCCL in this
// build, it exits 77, which meson counts as a skip.
#include <cstdio>

#include "gpu_skip.hpp"

#ifdef SHOAL_HAVE_NCCL
#include <cuda_runtime_api.h>

#include <exception>
#include <vector>

#include "comm_wrap/nccl/communicator.hpp"
#include "comm_wrap/stores/local_rendezvous_store.hpp"
#include "shoal/errors.hpp"

using shoal::comm::DataType;
using shoal::comm::NcclCommunicator;
using shoal::comm::NcclOptions;
using shoal::comm::ReduceOp;

namespace {

int failures = 0;

void expect(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "ok  " : "FAIL", what);
  if (!ok) ++failures;
}

bool allreduce_gives(NcclCommunicator& comm, ReduceOp op, float value, float want) {
  constexpr size_t n = 1 << 16;
  std::vector<float> host(n, value);
  void* mem = nullptr;
  if (cudaMalloc(&mem, n * sizeof(float)) != cudaSuccess) return false;
  auto* dev = static_cast<float*>(mem);
  cudaMemcpy(dev, host.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  comm.allreduce(dev, n, DataType::f32, op);
  cudaMemcpy(host.data(), dev, n * sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(dev);
  return host[0] == want && host[n - 1] == want;
}

void run() {
  shoal::comm::LocalRendezvousStore store1(1);
  NcclOptions o;
  o.epoch = 1;
  o.init_timeout = std::chrono::seconds(60);
  o.op_timeout = std::chrono::seconds(30);
  auto comm = NcclCommunicator::create(o, store1);
  expect(std::string(comm->backend()) == "nccl" && comm->world_size() == 1, "fresh init of a world of one");
  expect(allreduce_gives(*comm, ReduceOp::sum, 2.5f, 2.5f), "f32 sum allreduce");
  expect(allreduce_gives(*comm, ReduceOp::avg, -1.5f, -1.5f), "f32 avg allreduce");

  void* half = nullptr;
  cudaMalloc(&half, 1024 * 2);
  cudaMemset(half, 0, 1024 * 2);
  comm->allreduce(half, 1024, DataType::bf16, ReduceOp::sum);
  comm->allreduce(half, 1024, DataType::f16, ReduceOp::max);
  cudaFree(half);
  expect(true, "bf16 and f16 allreduce accepted");
  comm->barrier();
  expect(true, "barrier");

  comm->abort("smoke test");
  bool threw = false;
  try {
    comm->barrier();
  } catch (const shoal::ViewChanged&) {
    threw = true;
  }
  expect(threw && comm->aborted(), "after abort a collective throws ViewChanged");

  const auto state = comm->rebuild_state();
  expect(state.exists && !state.released && state.aborted, "an aborted communicator can still be shrunk");
  NcclOptions next = o;
  next.epoch = 2;
  auto shrunk = NcclCommunicator::shrink(*comm, shoal::comm::Shrink{{}, true}, next);
  expect(shrunk->epoch() == 2 && allreduce_gives(*shrunk, ReduceOp::sum, 4.0f, 4.0f),
         "the shrunk communicator of the next epoch allreduces");
  shrunk.reset();
  comm.reset();  // ncclCommAbort of the parent
  expect(true, "both released with ncclCommAbort");
}

}  // namespace

int main() {
  if (shoal::test::visible_gpus() == 0) return shoal::test::kSkipped;
  try {
    run();
  } catch (const std::exception& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
  return failures == 0 ? 0 : 1;
}
#else
int main() { return shoal::test::skip("built without NCCL"); }
#endif

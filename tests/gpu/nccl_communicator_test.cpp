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

// What the elastic loop and node health hand any communicator: small host buffers (the step agreement's
// int64 min, the state header's broadcast, 72-byte timing records gathered out of place).
void host_memory(NcclCommunicator& comm) {
  std::vector<int64_t> facts = {-1, 1, -41};
  void* dev = nullptr;
  cudaMalloc(&dev, 64);
  expect(shoal::comm::needs_staging(facts.data()) && !shoal::comm::needs_staging(dev),
         "host memory is told apart from device memory");
  cudaFree(dev);
  comm.allreduce(facts.data(), facts.size(), DataType::i64, ReduceOp::min);
  expect(facts == std::vector<int64_t>{-1, 1, -41}, "an int64 min allreduce of host memory");
  uint64_t header[2] = {17, 4096};
  comm.broadcast(header, sizeof(header), 0);
  expect(header[0] == 17 && header[1] == 4096, "a broadcast of host memory");
  std::vector<unsigned char> record(72), gathered(72, 0);
  for (size_t i = 0; i < record.size(); ++i) record[i] = static_cast<unsigned char>(i * 7 + 1);
  comm.allgather(record.data(), gathered.data(), record.size());
  expect(gathered == record, "an allgather of host records, out of place");
  std::vector<float> big(1 << 20, 0.5f);  // larger than the staging buffer so far: it grows
  comm.allreduce(big.data(), big.size(), DataType::f32, ReduceOp::sum);
  expect(big.front() == 0.5f && big.back() == 0.5f, "a 4 MiB host allreduce (the staging buffer grows)");
}

void run() {
  shoal::comm::LocalRendezvousStore store1(1);
  NcclOptions o;
  o.epoch = 1;
  o.rendezvous_timeout = std::chrono::seconds(60);
  o.collective_timeout = std::chrono::seconds(30);
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
  host_memory(*comm);

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
  // A world of one cannot lose a rank, and NCCL refuses a shrink that excludes nobody: refused before
  // NCCL is called; the next epoch inits afresh (what plan_rebuild says for the same ranks).
  NcclOptions next = o;
  next.epoch = 2;
  bool refused = false;
  try {
    (void)NcclCommunicator::shrink(*comm, shoal::comm::Shrink{{}, true}, next);
  } catch (const shoal::ViewChanged&) {
    refused = false;  // NCCL itself said no: the check did not run
  } catch (const shoal::Error&) {
    refused = true;
  }
  expect(refused, "a shrink that excludes nobody is refused before NCCL sees it");
  shoal::comm::LocalRendezvousStore store2(1);
  auto fresh = NcclCommunicator::create(next, store2);
  expect(fresh->epoch() == 2 && allreduce_gives(*fresh, ReduceOp::sum, 4.0f, 4.0f),
         "a fresh communicator of the next epoch allreduces beside the aborted one");
  fresh.reset();
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

// The Gloo communicator's reduce_scatter, all_to_all, gather and scatter. Like the first four, each runs
// on copies of the caller's buffers, so that a cancelled collective (still inside Gloo until its sockets
// wake it) never writes into memory the caller has moved on from.
#include <gloo/alltoall.h>
#include <gloo/gather.h>
#include <gloo/scatter.h>

#include <algorithm>
#include <cstring>

#include "comm_wrap/gloo/gloo_communicator.hpp"

namespace shoal::comm {

// An allreduce of the whole input, of which each rank keeps its block: Gloo's own reduce-scatter is of the
// older, registered-buffer kind with no timeout. Twice the bytes of a ring reduce-scatter on the wire.
template <class T>
void GlooCommunicator::reduce_scatter_as(const void* in, void* out, size_t count, ReduceOp op) {
  const auto* src = static_cast<const T*>(in);
  auto* dst = static_cast<T*>(out);
  if (count == 0 || world_size() == 1) {
    run("reduce_scatter", [] {});
    std::copy_n(src, count, dst);
    finish_avg(dst, count, op, world_size());
    return;
  }
  auto tmp = std::make_shared<std::vector<T>>(src, src + count * size_t(world_size()));
  allreduce_owned(tmp, op, "reduce_scatter");
  std::copy_n(tmp->data() + count * size_t(rank()), count, dst);
  finish_avg(dst, count, op, world_size());
}

void GlooCommunicator::reduce_scatter(const void* in, void* out, size_t count, DataType type, ReduceOp op) {
  switch (type) {
    case DataType::f32:
      return reduce_scatter_as<float>(in, out, count, op);
    case DataType::f64:
      return reduce_scatter_as<double>(in, out, count, op);
    case DataType::i32:
      return reduce_scatter_as<int32_t>(in, out, count, op);
    case DataType::i64:
      return reduce_scatter_as<int64_t>(in, out, count, op);
    case DataType::bf16:
    case DataType::f16:
      break;
  }
  throw Error(std::string("gloo backend: reduce_scatter of ") + to_string(type) +
              " is not supported on CPU buffers; convert to f32, or use the NCCL backend");
}

void GlooCommunicator::all_to_all(const void* in, void* out, size_t bytes_per_rank) {
  const size_t total = bytes_per_rank * size_t(world_size());
  if (bytes_per_rank == 0 || world_size() == 1) {
    run("all_to_all", [] {});
    if (total > 0) std::memmove(out, in, total);
    return;
  }
  auto input = std::make_shared<std::vector<char>>(static_cast<const char*>(in), static_cast<const char*>(in) + total);
  auto output = std::make_shared<std::vector<char>>(total);
  run("all_to_all", [ctx = context_, input, output, timeout = options_.collective_timeout] {
    gloo::AlltoallOptions opts(ctx);
    opts.setInput(input->data(), input->size());
    opts.setOutput(output->data(), output->size());
    opts.setTimeout(timeout);
    gloo::alltoall(opts);
  });
  std::copy(output->begin(), output->end(), static_cast<char*>(out));
}

void GlooCommunicator::gather(const void* in, void* out, size_t bytes_per_rank, int root) {
  check_rank(root, "gather root");
  const bool at_root = rank() == root;
  if (at_root && out == nullptr && bytes_per_rank > 0) throw Error("gloo backend: gather needs an output at the root");
  if (bytes_per_rank == 0 || world_size() == 1) {
    run("gather", [] {});
    if (bytes_per_rank > 0) std::memmove(out, in, bytes_per_rank);
    return;
  }
  auto input = std::make_shared<std::vector<char>>(static_cast<const char*>(in),
                                                   static_cast<const char*>(in) + bytes_per_rank);
  auto output = std::make_shared<std::vector<char>>(at_root ? bytes_per_rank * size_t(world_size()) : 0);
  run("gather", [ctx = context_, input, output, root, at_root, timeout = options_.collective_timeout] {
    gloo::GatherOptions opts(ctx);
    opts.setInput(input->data(), input->size());
    if (at_root) opts.setOutput(output->data(), output->size());
    opts.setRoot(root);
    opts.setTimeout(timeout);
    gloo::gather(opts);
  });
  if (at_root) std::copy(output->begin(), output->end(), static_cast<char*>(out));
}

void GlooCommunicator::scatter(const void* in, void* out, size_t bytes_per_rank, int root) {
  check_rank(root, "scatter root");
  const bool at_root = rank() == root;
  if (at_root && in == nullptr && bytes_per_rank > 0) throw Error("gloo backend: scatter needs an input at the root");
  if (bytes_per_rank == 0 || world_size() == 1) {
    run("scatter", [] {});
    if (bytes_per_rank > 0) std::memmove(out, in, bytes_per_rank);
    return;
  }
  auto input = std::make_shared<std::vector<char>>();
  if (at_root) {
    input->assign(static_cast<const char*>(in), static_cast<const char*>(in) + bytes_per_rank * size_t(world_size()));
  }
  auto output = std::make_shared<std::vector<char>>(bytes_per_rank);
  const int world = world_size();
  run("scatter", [ctx = context_, input, output, root, at_root, world, bytes_per_rank,
                  timeout = options_.collective_timeout] {
    gloo::ScatterOptions opts(ctx);
    if (at_root) {
      std::vector<char*> blocks;
      for (int r = 0; r < world; ++r) blocks.push_back(input->data() + bytes_per_rank * size_t(r));
      opts.setInputs(blocks, bytes_per_rank);
    }
    opts.setOutput(output->data(), output->size());
    opts.setRoot(root);
    opts.setTimeout(timeout);
    gloo::scatter(opts);
  });
  std::copy(output->begin(), output->end(), static_cast<char*>(out));
}

}  // namespace shoal::comm

// The Gloo communicator: Gloo's allreduce/broadcast/allgather/barrier behind shoal's interface, its
// abort, and the factory that connects the mesh (the class: gloo_communicator.hpp).
#include "comm_wrap/gloo/communicator.hpp"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "base/log.hpp"
#include "comm_wrap/gloo/gloo_communicator.hpp"
#include "comm_wrap/gloo/mesh_connect.hpp"
#include "comm_wrap/gloo/store_adapter.hpp"
#include "shoal/errors.hpp"

namespace shoal::comm {

bool is_gloo_timeout(std::string_view message) {
  return message.find("Timed out") != std::string_view::npos || message.find("timeout") != std::string_view::npos;
}

GlooCommunicator::GlooCommunicator(GlooOptions options, std::shared_ptr<gloo::rendezvous::Context> context,
                                   GlooPairSockets sockets)
    : options_(std::move(options)), context_(std::move(context)), sockets_(std::move(sockets)) {}

GlooCommunicator::~GlooCommunicator() {
  if (drainer_.joinable()) drainer_.join();
  // A collective still running belongs to the runner's worker, which owns what it uses (the context
  // included); shutting the sockets makes it, and the peers, finish soon instead of at the timeout.
  if (!aborted_.load()) sockets_.shutdown_all();
}

void GlooCommunicator::allreduce(void* buf, size_t count, DataType type, ReduceOp op) {
  switch (type) {
    case DataType::f32:
      return allreduce_as<float>(buf, count, op);
    case DataType::f64:
      return allreduce_as<double>(buf, count, op);
    case DataType::i32:
      return allreduce_as<int32_t>(buf, count, op);
    case DataType::i64:
      return allreduce_as<int64_t>(buf, count, op);
    case DataType::bf16:
    case DataType::f16:
      break;
  }
  throw Error(std::string("gloo backend: allreduce of ") + to_string(type) +
              " is not supported on CPU buffers; convert to f32, or use the NCCL backend");
}

void GlooCommunicator::allreduce_in_place(void* buf, size_t count, DataType type, ReduceOp op,
                                          std::shared_ptr<void> keep) {
  switch (type) {
    case DataType::f32:
      return allreduce_in_place_as(static_cast<float*>(buf), count, op, std::move(keep));
    case DataType::f64:
      return allreduce_in_place_as(static_cast<double*>(buf), count, op, std::move(keep));
    case DataType::i32:
      return allreduce_in_place_as(static_cast<int32_t*>(buf), count, op, std::move(keep));
    case DataType::i64:
      return allreduce_in_place_as(static_cast<int64_t*>(buf), count, op, std::move(keep));
    case DataType::bf16:
    case DataType::f16:
      break;
  }
  throw Error(std::string("gloo backend: allreduce of ") + to_string(type) +
              " is not supported on CPU buffers; convert to f32, or use the NCCL backend");
}

// The task holds `keep` (the owner of `buf`): after an abort the runner's worker may still be inside Gloo,
// with the sockets shut but a read of data already queued possibly under way, until Gloo returns.
template <class T>
void GlooCommunicator::allreduce_in_place_as(T* buf, size_t count, ReduceOp op, std::shared_ptr<void> keep) {
  if (count > 0 && world_size() > 1) {
    run("allreduce", [ctx = context_, buf, count, keep = std::move(keep), fn = reduce_fn<T>(op),
                      timeout = options_.collective_timeout] {
      gloo::AllreduceOptions opts(ctx);
      opts.setOutput(buf, count);
      opts.setReduceFunction(fn);
      opts.setTimeout(timeout);
      gloo::allreduce(opts);
    });
  } else {
    run("allreduce", [] {});
  }
  finish_avg(buf, count, op, world_size());
}

void GlooCommunicator::broadcast(void* buf, size_t bytes, int root) {
  check_rank(root, "broadcast root");
  if (bytes == 0 || world_size() == 1) return run("broadcast", [] {});
  auto tmp = std::make_shared<std::vector<char>>(static_cast<char*>(buf), static_cast<char*>(buf) + bytes);
  run("broadcast", [ctx = context_, tmp, root, timeout = options_.collective_timeout] {
    gloo::BroadcastOptions opts(ctx);
    opts.setOutput(tmp->data(), tmp->size());
    opts.setRoot(root);
    opts.setTimeout(timeout);
    gloo::broadcast(opts);
  });
  std::copy(tmp->begin(), tmp->end(), static_cast<char*>(buf));
}

void GlooCommunicator::allgather(const void* in, void* out, size_t bytes_per_rank) {
  if (bytes_per_rank == 0) return run("allgather", [] {});
  if (world_size() == 1) {
    run("allgather", [] {});
    std::copy_n(static_cast<const char*>(in), bytes_per_rank, static_cast<char*>(out));
    return;
  }
  auto input = std::make_shared<std::vector<char>>(static_cast<const char*>(in),
                                                   static_cast<const char*>(in) + bytes_per_rank);
  auto output = std::make_shared<std::vector<char>>(bytes_per_rank * size_t(world_size()));
  run("allgather", [ctx = context_, input, output, timeout = options_.collective_timeout] {
    gloo::AllgatherOptions opts(ctx);
    opts.setInput(input->data(), input->size());
    opts.setOutput(output->data(), output->size());
    opts.setTimeout(timeout);
    gloo::allgather(opts);
  });
  std::copy(output->begin(), output->end(), static_cast<char*>(out));
}

void GlooCommunicator::barrier() {
  if (world_size() == 1) return run("barrier", [] {});
  run("barrier", [ctx = context_, timeout = options_.collective_timeout] {
    gloo::BarrierOptions opts(ctx);
    opts.setTimeout(timeout);
    gloo::barrier(opts);
  });
}

void GlooCommunicator::abort(const std::string& why) {
  {
    std::lock_guard lock(why_mu_);
    if (aborted_.load()) return;
    if (!draining_.load()) why_ = why;  // a drain keeps the reason it was started for
    aborted_.store(true);  // before the shutdown, so the woken collective sees why it woke
  }
  runner_.cancel();  // the caller returns now, whatever Gloo does with the shut sockets
  {
    // Posted sends and receives wait on their own threads: wake them too.
    std::lock_guard lock(p2p_mu_);
    for (auto* buf : p2p_pending_) {
      buf->abortWaitSend();
      buf->abortWaitRecv();
    }
  }
  const size_t shut = sockets_.shutdown_all();
  log::get(log::Component::comm)
      .info("gloo rank {} of epoch {} aborted ({}): shut down {} of {} pair sockets", rank(), epoch(), why, shut,
            sockets_.found());
}

void GlooCommunicator::abort_after(const std::string& why, std::chrono::milliseconds grace) {
  {
    std::lock_guard lock(why_mu_);
    if (aborted_.load() || draining_.load()) return;
    why_ = why;
    draining_.store(true);  // run() refuses new collectives from now on
  }
  // The collective in flight (if any) holds op_mu_: whoever gets it first, the drainer or the grace's end,
  // decides whether it finished on its own.
  drainer_ = std::thread([this, why, grace] {
    std::unique_lock lock(op_mu_, std::defer_lock);
    const bool finished = lock.try_lock_for(grace);
    abort(finished ? why : why + " (the collective in flight did not finish within " +
                               std::to_string(grace.count()) + " ms)");
  });
}

template <class T>
void GlooCommunicator::allreduce_as(void* buf, size_t count, ReduceOp op) {
  auto* p = static_cast<T*>(buf);
  if (count > 0 && world_size() > 1) {
    auto tmp = std::make_shared<std::vector<T>>(p, p + count);
    allreduce_owned(tmp, op, "allreduce");
    std::copy(tmp->begin(), tmp->end(), p);
  } else {
    run("allreduce", [] {});
  }
  finish_avg(p, count, op, world_size());
}

// After any failure the context is unusable (Gloo leaves pending slots behind), so the communicator
// aborts itself; shutting its sockets also tells every peer at once instead of at their timeout.
void GlooCommunicator::fail(const char* what, const std::string& message, bool timed_out) {
  if (aborted_.load()) throw_aborted();  // woken by abort(): the abort's reason is the story
  if (timed_out) {
    abort(std::string(what) + " timed out");
    throw Timeout("gloo " + std::string(what) + " of rank " + std::to_string(rank()) + ", epoch " +
                  std::to_string(epoch()) + ": not complete within " + std::to_string(options_.collective_timeout.count()) +
                  " ms (" + message + ")");
  }
  // Evidence for the agent before our own sockets close (after that every peer sees us go too).
  if (options_.on_peer_lost) {
    if (const auto peer = sockets_.rank_named_in(message); peer && *peer != rank()) {
      try {
        options_.on_peer_lost(*peer);
      } catch (const std::exception& e) {
        log::get(log::Component::comm).warn("gloo rank {}: reporting the lost peer failed: {}", rank(), e.what());
      }
    }
  }
  abort(std::string(what) + " failed, a peer is gone: " + message);
  throw_aborted();
}

void GlooCommunicator::throw_aborted() const {
  std::lock_guard lock(why_mu_);
  throw ViewChanged(epoch(), "gloo communicator aborted: " + why_);
}

void GlooCommunicator::check_rank(int r, const char* what) const {
  if (r < 0 || r >= world_size()) {
    throw Error(std::string("gloo backend: ") + what + " " + std::to_string(r) + " is outside [0, " +
                std::to_string(world_size()) + ")");
  }
}

namespace {

void check_options(const GlooOptions& o) {
  if (o.world_size < 1 || o.rank < 0 || o.rank >= o.world_size) {
    throw Error("gloo backend: rank " + std::to_string(o.rank) + " is outside a world of " +
                std::to_string(o.world_size));
  }
  if (o.collective_timeout.count() <= 0 || o.rendezvous_timeout.count() <= 0) {
    throw Error("gloo backend: collective_timeout and rendezvous_timeout must be positive");
  }
}

}  // namespace

std::unique_ptr<Communicator> make_gloo_communicator(const GlooOptions& options, RendezvousStore& store) {
  check_options(options);
  auto& logger = log::get(log::Component::comm);
  const auto started = std::chrono::steady_clock::now();

  std::shared_ptr<gloo::transport::Device> device;
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = options.bind_host;
    device = gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    throw Error("gloo backend: cannot bind a TCP device to '" + options.bind_host + "': " + e.what());
  }

  GlooStoreAdapter adapter(store, "gloo/", options.rendezvous_timeout, options.world_size, options.rank);
  auto context = std::make_shared<MeshContext>(options.rank, options.world_size);
  // A pair waits 5 times its context's timeout for its TCP connection (gloo/transport/tcp/pair.h,
  // waitUntil), so a fifth of rendezvous_timeout bounds the connect by rendezvous_timeout.
  context->setTimeout(std::max(std::chrono::milliseconds(1), options.rendezvous_timeout / 5));
  const std::string who = "gloo rank " + std::to_string(options.rank) + " of epoch " + std::to_string(options.epoch);
  try {
    // shoal::ViewChanged and shoal::Timeout thrown by the store pass through unchanged.
    context->connect_mesh(adapter, device);
  } catch (const gloo::IoException& e) {
    if (is_gloo_timeout(e.what())) throw Timeout(who + ": connecting to the peers: " + e.what());
    throw ViewChanged(options.epoch, who + ": a peer failed while connecting: " + e.what());
  } catch (const gloo::EnforceNotMet& e) {
    throw Error(who + ": connecting to the peers: " + e.what());
  } catch (const gloo::Exception& e) {
    throw Error(who + ": connecting to the peers: " + e.what());
  }
  context->setTimeout(options.collective_timeout);

  auto sockets = GlooPairSockets::find(*context, adapter);
  bool unsupported = false;
  const size_t capped = sockets.tune_for_loss(&unsupported);
  if (unsupported) {
    static std::once_flag once;
    std::call_once(once, [&] {
      logger.info(
          "this kernel has no TCP_RTO_MAX_MS (Linux 6.15+): a collective that loses packets may wait "
          "for TCP's retransmission backoff, up to 120 s");
    });
  }
  logger.debug(
      "{}: connected {} peers in {} ms ({} pair sockets identified for abort, {} with the backoff cap)", who,
      options.world_size - 1,
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count(),
      sockets.found(), capped);
  return std::make_unique<GlooCommunicator>(options, std::move(context), std::move(sockets));
}

}  // namespace shoal::comm

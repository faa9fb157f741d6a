// The Gloo communicator: Gloo's allreduce/broadcast/allgather/barrier behind shoal's interface, with
// an abort that wakes a collective blocked on another thread (see gloo_pair_sockets.hpp for how).
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
#include "comm_wrap/gloo/collective_runner.hpp"
#include "comm_wrap/gloo/pair_sockets.hpp"
#include "comm_wrap/gloo/mesh_connect.hpp"
#include "comm_wrap/gloo/store_adapter.hpp"
#include "shoal/errors.hpp"

namespace shoal::comm {

namespace {

using ReduceFn = void (*)(void*, const void*, const void*, size_t);

template <class T>
void reduce_sum(void* out, const void* a, const void* b, size_t n) {
  auto* o = static_cast<T*>(out);
  const auto* x = static_cast<const T*>(a);
  const auto* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) o[i] = x[i] + y[i];
}

template <class T>
void reduce_min(void* out, const void* a, const void* b, size_t n) {
  auto* o = static_cast<T*>(out);
  const auto* x = static_cast<const T*>(a);
  const auto* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) o[i] = std::min(x[i], y[i]);
}

template <class T>
void reduce_max(void* out, const void* a, const void* b, size_t n) {
  auto* o = static_cast<T*>(out);
  const auto* x = static_cast<const T*>(a);
  const auto* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) o[i] = std::max(x[i], y[i]);
}

// avg is a sum followed by a local division; integers divide as C++ does (truncating toward zero),
// which is also what NCCL's ncclAvg does for integer types.
template <class T>
ReduceFn reduce_fn(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg:
      return &reduce_sum<T>;
    case ReduceOp::min:
      return &reduce_min<T>;
    case ReduceOp::max:
      return &reduce_max<T>;
  }
  return nullptr;
}

bool is_timeout(std::string_view message) {
  return message.find("Timed out") != std::string_view::npos || message.find("timeout") != std::string_view::npos;
}

class GlooCommunicator final : public Communicator {
 public:
  GlooCommunicator(GlooOptions options, std::shared_ptr<gloo::rendezvous::Context> context, GlooPairSockets sockets)
      : options_(std::move(options)), context_(std::move(context)), sockets_(std::move(sockets)) {}

  ~GlooCommunicator() override {
    if (drainer_.joinable()) drainer_.join();
    // A collective still running belongs to the runner's worker, which owns what it uses (the context
    // included); shutting the sockets makes it, and the peers, finish soon instead of at the timeout.
    if (!aborted_.load()) sockets_.shutdown_all();
  }

  int rank() const override { return options_.rank; }
  int world_size() const override { return options_.world_size; }
  uint64_t epoch() const override { return options_.epoch; }
  const char* backend() const override { return "gloo"; }

  void allreduce(void* buf, size_t count, DataType type, ReduceOp op) override {
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

  void broadcast(void* buf, size_t bytes, int root) override {
    check_rank(root, "broadcast root");
    if (bytes == 0 || world_size() == 1) return run("broadcast", [] {});
    auto tmp = std::make_shared<std::vector<char>>(static_cast<char*>(buf), static_cast<char*>(buf) + bytes);
    run("broadcast", [ctx = context_, tmp, root, timeout = options_.op_timeout] {
      gloo::BroadcastOptions opts(ctx);
      opts.setOutput(tmp->data(), tmp->size());
      opts.setRoot(root);
      opts.setTimeout(timeout);
      gloo::broadcast(opts);
    });
    std::copy(tmp->begin(), tmp->end(), static_cast<char*>(buf));
  }

  void allgather(const void* in, void* out, size_t bytes_per_rank) override {
    if (bytes_per_rank == 0) return run("allgather", [] {});
    if (world_size() == 1) {
      run("allgather", [] {});
      std::copy_n(static_cast<const char*>(in), bytes_per_rank, static_cast<char*>(out));
      return;
    }
    auto input = std::make_shared<std::vector<char>>(static_cast<const char*>(in),
                                                     static_cast<const char*>(in) + bytes_per_rank);
    auto output = std::make_shared<std::vector<char>>(bytes_per_rank * size_t(world_size()));
    run("allgather", [ctx = context_, input, output, timeout = options_.op_timeout] {
      gloo::AllgatherOptions opts(ctx);
      opts.setInput(input->data(), input->size());
      opts.setOutput(output->data(), output->size());
      opts.setTimeout(timeout);
      gloo::allgather(opts);
    });
    std::copy(output->begin(), output->end(), static_cast<char*>(out));
  }

  void barrier() override {
    if (world_size() == 1) return run("barrier", [] {});
    run("barrier", [ctx = context_, timeout = options_.op_timeout] {
      gloo::BarrierOptions opts(ctx);
      opts.setTimeout(timeout);
      gloo::barrier(opts);
    });
  }

  void abort(const std::string& why) override {
    {
      std::lock_guard lock(why_mu_);
      if (aborted_.load()) return;
      if (!draining_.load()) why_ = why;  // a drain keeps the reason it was started for
      aborted_.store(true);  // before the shutdown, so the woken collective sees why it woke
    }
    runner_.cancel();  // the caller returns now, whatever Gloo does with the shut sockets
    const size_t shut = sockets_.shutdown_all();
    log::get(log::Component::comm)
        .info("gloo rank {} of epoch {} aborted ({}): shut down {} of {} pair sockets", rank(), epoch(), why, shut,
              sockets_.found());
  }

  bool aborted() const override { return aborted_.load() || draining_.load(); }

  void abort_after(const std::string& why, std::chrono::milliseconds grace) override {
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

 private:
  template <class T>
  void allreduce_as(void* buf, size_t count, ReduceOp op) {
    auto* p = static_cast<T*>(buf);
    if (count > 0 && world_size() > 1) {
      auto tmp = std::make_shared<std::vector<T>>(p, p + count);
      run("allreduce", [ctx = context_, tmp, fn = reduce_fn<T>(op), timeout = options_.op_timeout] {
        gloo::AllreduceOptions opts(ctx);
        opts.setOutput(tmp->data(), tmp->size());
        opts.setReduceFunction(fn);
        opts.setTimeout(timeout);
        gloo::allreduce(opts);
      });
      std::copy(tmp->begin(), tmp->end(), p);
    } else {
      run("allreduce", [] {});
    }
    if (op == ReduceOp::avg) {
      for (size_t i = 0; i < count; ++i) p[i] = static_cast<T>(p[i] / static_cast<T>(world_size()));
    }
  }

  // Runs one collective on the runner's worker: one at a time, refused once aborted, released at once
  // by abort(), and every Gloo failure translated. The task owns copies of the buffers it touches.
  template <class Fn>
  void run(const char* what, Fn&& fn) {
    std::lock_guard lock(op_mu_);
    if (aborted_.load() || draining_.load()) throw_aborted();
    bool finished = false;
    try {
      finished = runner_.run(std::forward<Fn>(fn));
    } catch (const gloo::IoException& e) {
      fail(what, e.what(), is_timeout(e.what()));
    } catch (const gloo::EnforceNotMet& e) {
      fail(what, e.what(), false);
    } catch (const gloo::Exception& e) {
      fail(what, e.what(), false);
    }
    if (!finished || aborted_.load()) throw_aborted();
  }

  // After any failure the context is unusable (Gloo leaves pending slots behind), so the communicator
  // aborts itself; shutting its sockets also tells every peer at once instead of at their timeout.
  [[noreturn]] void fail(const char* what, const std::string& message, bool timed_out) {
    if (aborted_.load()) throw_aborted();  // woken by abort(): the abort's reason is the story
    if (timed_out) {
      abort(std::string(what) + " timed out");
      throw Timeout("gloo " + std::string(what) + " of rank " + std::to_string(rank()) + ", epoch " +
                    std::to_string(epoch()) + ": not complete within " + std::to_string(options_.op_timeout.count()) +
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

  [[noreturn]] void throw_aborted() const {
    std::lock_guard lock(why_mu_);
    throw ViewChanged(epoch(), "gloo communicator aborted: " + why_);
  }

  void check_rank(int r, const char* what) const {
    if (r < 0 || r >= world_size()) {
      throw Error(std::string("gloo backend: ") + what + " " + std::to_string(r) + " is outside [0, " +
                  std::to_string(world_size()) + ")");
    }
  }

  const GlooOptions options_;
  std::shared_ptr<gloo::rendezvous::Context> context_;
  const GlooPairSockets sockets_;
  CollectiveRunner runner_;
  std::timed_mutex op_mu_;  // Gloo contexts run one collective at a time
  std::atomic<bool> aborted_{false};
  std::atomic<bool> draining_{false};  // abort_after: no new collective; abort once the one in flight ends
  std::thread drainer_;
  mutable std::mutex why_mu_;
  std::string why_;
};

void check_options(const GlooOptions& o) {
  if (o.world_size < 1 || o.rank < 0 || o.rank >= o.world_size) {
    throw Error("gloo backend: rank " + std::to_string(o.rank) + " is outside a world of " +
                std::to_string(o.world_size));
  }
  if (o.op_timeout.count() <= 0 || o.connect_timeout.count() <= 0) {
    throw Error("gloo backend: op_timeout and connect_timeout must be positive");
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

  GlooStoreAdapter adapter(store, "gloo/", options.connect_timeout, options.world_size, options.rank);
  auto context = std::make_shared<MeshContext>(options.rank, options.world_size);
  // A pair waits 5 times its context's timeout for its TCP connection (gloo/transport/tcp/pair.h,
  // waitUntil), so a fifth of connect_timeout bounds the connect by connect_timeout.
  context->setTimeout(std::max(std::chrono::milliseconds(1), options.connect_timeout / 5));
  const std::string who = "gloo rank " + std::to_string(options.rank) + " of epoch " + std::to_string(options.epoch);
  try {
    // shoal::ViewChanged and shoal::Timeout thrown by the store pass through unchanged.
    context->connect_mesh(adapter, device);
  } catch (const gloo::IoException& e) {
    if (is_timeout(e.what())) throw Timeout(who + ": connecting to the peers: " + e.what());
    throw ViewChanged(options.epoch, who + ": a peer failed while connecting: " + e.what());
  } catch (const gloo::EnforceNotMet& e) {
    throw Error(who + ": connecting to the peers: " + e.what());
  } catch (const gloo::Exception& e) {
    throw Error(who + ": connecting to the peers: " + e.what());
  }
  context->setTimeout(options.op_timeout);

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

// Saving through RankStore, and the collective restore: reports, choice, load, agreement.
#include "session/session_checkpoints.hpp"

#include <algorithm>
#include <thread>

#include "base/log.hpp"
#include "ckpt_shm/chunk_lists.hpp"
#include "session/restore_loading.hpp"
#include "shoal/errors.hpp"

namespace shoal {

std::span<const std::byte> RestoredCheckpoint::buffer(std::string_view name) const {
  for (const auto& e : entries) {
    if (e.name != name) continue;
    if (data.size() < e.offset + e.size) {
      throw Error("the restored checkpoint of step " + std::to_string(step) + " holds no bytes of '" +
                  std::string(name) + "' here: restore_into copied them to the caller's memory");
    }
    return std::span<const std::byte>(data).subspan(e.offset, e.size);
  }
  throw Error("the restored checkpoint of step " + std::to_string(step) + " has no buffer '" + std::string(name) + "'");
}

bool RestoredCheckpoint::has(std::string_view name) const {
  return std::any_of(entries.begin(), entries.end(), [&](const Entry& e) { return e.name == name; });
}

}  // namespace shoal

namespace shoal::session {
namespace {

class SaveInProgress : public CheckpointSave {
 public:
  SaveInProgress(std::shared_ptr<ckpt::RankStore> store, std::vector<ckpt::WritableBuffer> buffers, uint64_t step,
                 std::function<void(uint32_t, uint64_t)> committed)
      : store_(std::move(store)), buffers_(std::move(buffers)), step_(step), committed_(std::move(committed)) {}
  ~SaveInProgress() override { abandon(); }

  std::span<std::byte> buffer(std::string_view name) override { return buffers_[index(name)].bytes; }

  void write(std::string_view name, std::span<const std::byte> bytes) override {
    if (done_) throw Error("the save of step " + std::to_string(step_) + " has ended");
    if (auto r = store_->write_buffer(index(name), bytes); !r) throw Error("checkpoint write: " + r.error().message);
  }

  void write_from_device(std::string_view name, const void* device_bytes, void* cuda_stream) override {
    if (done_) throw Error("the save of step " + std::to_string(step_) + " has ended");
    if (auto r = store_->copy_from_device(index(name), device_bytes, cuda_stream); !r) {
      throw Error("checkpoint device copy of '" + std::string(name) + "': " + r.error().message);
    }
  }

  void commit() override {
    if (done_) throw Error("the save of step " + std::to_string(step_) + " has ended");
    auto sealed = store_->commit();
    done_ = true;
    if (!sealed) throw Error("checkpoint commit of step " + std::to_string(step_) + ": " + sealed.error().message);
    if (committed_) committed_(store_->config().rank, step_);
  }

  void abandon() override {
    if (done_) return;
    done_ = true;
    store_->abandon();
  }

 private:
  size_t index(std::string_view name) const {
    for (size_t i = 0; i < buffers_.size(); ++i) {
      if (buffers_[i].name == name) return i;
    }
    throw Error("the save of step " + std::to_string(step_) + " declared no buffer '" + std::string(name) + "'");
  }

  std::shared_ptr<ckpt::RankStore> store_;
  std::vector<ckpt::WritableBuffer> buffers_;
  uint64_t step_;
  std::function<void(uint32_t, uint64_t)> committed_;
  bool done_ = false;
};

}  // namespace

void SessionCheckpoints::follow_view(uint64_t lineage) {
  std::lock_guard lock(mu_);
  if (!ctx_.store_by_lineage || store_resolved_) return;
  store_resolved_ = true;
  ctx_.store = ckpt::store_for_lineage(ctx_.store, lineage);
  stores_.clear();
}

std::string SessionCheckpoints::segment_store() const {
  std::lock_guard lock(mu_);
  return ctx_.store;
}

std::shared_ptr<ckpt::RankStore>& SessionCheckpoints::store_for(uint32_t rank, uint32_t world) {
  auto& store = stores_[rank];
  if (!store || store->config().world != world) {
    auto opened = ckpt::RankStore::open(
        ckpt::RankStoreConfig{.job = ctx_.job, .rank = rank, .world = world, .store = ctx_.store});
    if (!opened) throw Error("checkpoint store of rank " + std::to_string(rank) + ": " + opened.error().message);
    store = std::make_shared<ckpt::RankStore>(std::move(*opened));
  }
  return store;
}

void SessionCheckpoints::prepare(uint32_t rank, uint32_t world, const std::vector<CheckpointBuffer>& buffers) {
  std::vector<ckpt::BufferSpec> specs;
  for (const auto& b : buffers) specs.push_back({b.name, b.bytes});
  auto plan = ckpt::plan_layout(specs);
  if (!plan) throw Error("checkpoint prepare: " + plan.error().message);
  std::lock_guard lock(mu_);
  store_for(rank, world)->prepare(ckpt::segment_bytes_for(specs, *plan));
}

std::unique_ptr<CheckpointSave> SessionCheckpoints::begin_save(uint64_t step, uint32_t rank, uint32_t world,
                                                               const std::vector<CheckpointBuffer>& buffers) {
  std::lock_guard lock(mu_);
  auto& store = store_for(rank, world);
  if (store->saving()) store->abandon();  // a save left open by an earlier CheckpointSave that is still alive
  std::vector<ckpt::BufferSpec> specs;
  for (const auto& b : buffers) specs.push_back({b.name, b.bytes});
  auto spans = store->begin_save(step, specs);
  if (!spans) throw Error("checkpoint save of step " + std::to_string(step) + ": " + spans.error().message);
  // The agent is told, and this process remembers the step for wait_safe.
  auto committed = [this](uint32_t r, uint64_t s) {
    {
      std::lock_guard lock(mu_);
      auto& last = (*last_committed_)[r];
      last = std::max(last, s);
    }
    if (ctx_.committed) ctx_.committed(r, s);
  };
  return std::make_unique<SaveInProgress>(store, std::move(*spans), step, std::move(committed));
}

bool SessionCheckpoints::wait_safe(uint64_t step, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::map<uint32_t, uint64_t> ranks;
  {
    std::lock_guard lock(mu_);
    ranks = *last_committed_;
  }
  if (ranks.empty()) return false;
  for (const auto& [rank, last] : ranks) {
    if (last < step) return false;
  }
  std::string last_problem;
  while (true) {
    bool all = true;
    for (const auto& [rank, last] : ranks) {
      auto s = ctx_.safety ? ctx_.safety(rank) : Result<ckpt_service::RankSafety>(fail(std::string("no agent")));
      if (!s) {
        last_problem = s.error().message;
        all = false;
      } else if (!s->safe(last)) {
        all = false;
      }
    }
    if (all) return true;
    if (std::chrono::steady_clock::now() >= deadline) {
      log::ckpt().warn("ckpt: step {} was not safe within {} ms{}", step, timeout.count(),
                       last_problem.empty() ? std::string() : " (" + last_problem + ")");
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

uint64_t SessionCheckpoints::next_restore_call(const Communicator& comm, uint32_t attempt) {
  std::lock_guard lock(mu_);
  std::erase_if(restores_, [&](const auto& e) { return e.first.first < comm.epoch(); });
  return ++restores_[{comm.epoch(), attempt}];
}

std::optional<RestoredCheckpoint> SessionCheckpoints::restore(Communicator& comm, uint32_t attempt,
                                                              comm::RendezvousStore& store,
                                                              std::span<const ckpt::ExpectedHolder> expected,
                                                              std::optional<uint32_t> saved_rank,
                                                              const RestorePlacer* place) {
  const auto rank = static_cast<uint32_t>(comm.rank());
  uint64_t at_most = UINT64_MAX;
  // Keys must match across ranks: the n-th restore on this communicator on every rank (a collective is
  // called the same number of times by all ranks of a communicator); `store` already scopes the attempt.
  const uint64_t call = next_restore_call(comm, attempt);
  for (int attempt = 0;; ++attempt) {
    const std::string prefix = "ckpt/" + std::to_string(call) + "/" + std::to_string(attempt) + "/";
    // 1. What this host holds (one report per host), and the saved rank this rank asks for, if it does.
    if (saved_rank) store.set(prefix + "want/" + std::to_string(rank), comm::to_bytes(std::to_string(*saved_rank)));
    // 2. Rank 0 alone reads the reports and plans for everyone: by default each rank restores what its own
    // host saved where it can; with saved_rank given (on every rank), the step every saved rank completed.
    if (rank == 0) {
      plan_for_all(comm, store, prefix, expected, saved_rank.has_value(), at_most);
    } else {
      publish_report(comm, store, prefix, expected);
    }
    const auto planned = read_plan(comm, store, prefix, expected);
    if (!planned) {
      log::ckpt().info("ckpt: no checkpoint step is complete for a restore");
      return std::nullopt;
    }
    const ckpt::RankPlan& plan = *planned;
    if (saved_rank && plan.source != *saved_rank) {
      throw Error("rank " + std::to_string(rank) + " asked to restore saved rank " + std::to_string(*saved_rank) +
                  ", but rank 0 planned saved rank " + std::to_string(plan.source) +
                  " for it (every rank names a saved rank, or none does)");
    }
    const uint32_t source = plan.source;
    // 3. Load: this host's memory first, then the peers that hold it, best first.
    LoadRequest request{ctx_.job, segment_store(), source, plan.step, place};
    std::optional<RestoredCheckpoint> loaded;
    std::string placer_failed;
    try {
      // The rank's own store in this process maps the version already: no second mapping of it.
      std::shared_ptr<ckpt::RankStore> own;
      {
        std::lock_guard lock(mu_);
        if (auto it = stores_.find(source); it != stores_.end()) own = it->second;
      }
      if (own && !own->saving()) {
        if (auto segment = own->sealed_segment(plan.step)) loaded = load_mapped(request, *segment);
      }
      if (!loaded) loaded = load_local(request);
      for (const auto& holder : plan.holders) {
        if (loaded) break;
        if (holder.address == ctx_.agent_addr) continue;  // this host: load_local looked already
        LoadRequest bounded = request;
        bounded.max_bytes = holder.bytes;
        loaded = load_from_peer(bounded, ckpt_service::TransferPeer{holder.address, ctx_.ckpt_hello}, holder.holder);
      }
    } catch (const PlacerFailed& e) {
      placer_failed = e.what();
    }
    // 4. Everyone loaded, or everyone tries an older step, or (a placer refused) everyone stops: rank 0
    // reads every outcome and says which.
    const std::string outcome = !placer_failed.empty() ? "E" + placer_failed : loaded ? "1" : "0";
    const std::string all = verdict(comm, store, prefix, outcome, plan.step);
    if (!all.empty() && all.front() == 'E') throw Error(all.substr(1));
    if (all == "1" && loaded) {
      log::ckpt().info("ckpt: restored rank {} step {} from {} ({} in {:.3f} s)", source, plan.step, loaded->source,
                       place ? "in place" : std::to_string(loaded->data.size()) + " bytes", loaded->seconds);
      return loaded;
    }
    log::ckpt().warn("ckpt: step {} could not be loaded by every rank; trying an older one", plan.step);
    if (plan.step == 0) return std::nullopt;
    at_most = plan.step - 1;
  }
}

}  // namespace shoal::session

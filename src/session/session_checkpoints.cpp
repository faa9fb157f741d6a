// Saving through RankStore, and the collective restore: reports, choice, load, agreement.
#include "session/session_checkpoints.hpp"

#include "ckpt_shm/chunk_lists.hpp"

#include <algorithm>
#include <thread>

#include "base/log.hpp"
#include "ckpt.pb.h"
#include "ckpt_shm/chunk_lists.hpp"
#include "ckpt_shm/held_scan.hpp"
#include "ckpt_shm/restore_choice.hpp"
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

comm::Bytes to_bytes(const std::string& s) { return comm::Bytes(s.begin(), s.end()); }

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

std::vector<ckpt::HolderReport> SessionCheckpoints::collect_reports(Communicator& comm, comm::RendezvousStore& store,
                                                                    const std::string& prefix,
                                                                    std::span<const ckpt::ExpectedHolder> expected) {
  const int world = comm.world_size();
  const auto rank = static_cast<uint32_t>(comm.rank());
  wire::HolderReport mine;
  mine.set_holder(ctx_.holder);
  mine.set_addr(ctx_.agent_addr);
  for (const auto& h : ckpt::scan_held(segment_store())) {
    if (!h.version || h.version->id.job != ctx_.job) continue;
    auto* e = mine.add_held();
    e->set_rank(h.version->id.rank);
    e->set_step(h.version->id.step);
    e->set_world(h.version->id.world);
    e->set_bytes(h.version->total_bytes);
    e->set_local(!h.replica);
  }
  store.set(prefix + "report/" + std::to_string(rank), to_bytes(mine.SerializeAsString()));
  std::vector<std::string> keys;
  for (int r = 0; r < world; ++r) keys.push_back(prefix + "report/" + std::to_string(r));
  const auto values = store.multi_get(keys, ctx_.rendezvous_timeout);
  std::vector<ckpt::HolderReport> reports;
  for (const auto& v : values) {
    wire::HolderReport m;
    if (!m.ParseFromArray(v.data(), static_cast<int>(v.size()))) throw Error("a malformed checkpoint report");
    ckpt::HolderReport r{m.holder(), m.addr(), {}};
    for (const auto& e : m.held()) r.held.push_back({e.rank(), e.step(), e.world(), e.bytes(), e.local()});
    reports.push_back(std::move(r));
  }
  // Any key holder can write any rank's report: only what the view's own member for that rank says counts.
  if (const auto dropped = ckpt::drop_foreign_reports(reports, expected); !dropped.empty()) {
    foreign_reports_.fetch_add(dropped.size(), std::memory_order_relaxed);
    std::lock_guard lock(mu_);
    if (auto held = warn_.admit("foreign", log::WarnLimiter::Clock::now())) {
      log::ckpt().warn(
          "ckpt: ignored the checkpoint report of rank {}{}: it names another holder or address than the "
          "view gives that rank (written by another key holder?); {} ignored so far{}",
          dropped.front(), dropped.size() > 1 ? " and " + std::to_string(dropped.size() - 1) + " more" : "",
          foreign_reports_.load(std::memory_order_relaxed),
          *held ? " (" + std::to_string(*held) + " warnings held back)" : std::string());
    }
  }
  return reports;
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
  const int world = comm.world_size();
  const auto rank = static_cast<uint32_t>(comm.rank());
  uint64_t at_most = UINT64_MAX;
  // Keys must match across ranks: the n-th restore on this communicator on every rank (a collective is
  // called the same number of times by all ranks of a communicator); `store` already scopes the attempt.
  const uint64_t call = next_restore_call(comm, attempt);
  for (int attempt = 0;; ++attempt) {
    const std::string prefix = "ckpt/" + std::to_string(call) + "/" + std::to_string(attempt) + "/";
    // 1. What this host holds, for everyone; everyone's, for this rank.
    auto reports = collect_reports(comm, store, prefix, expected);
    std::vector<std::string> keys;
    // 2. The same choice on every rank: by default each rank restores what its own host saved where it
    // can (reports are in rank order); with saved_rank given (on every rank), the step every saved rank
    // completed.
    std::optional<ckpt::RestoreChoice> choice;
    std::optional<uint32_t> wanted = saved_rank;
    if (saved_rank) {
      choice = ckpt::choose_restore(reports, at_most);
    } else if (auto w = ckpt::choose_restore_for_world(reports, at_most)) {
      choice = std::move(w->choice);
      wanted = w->sources[rank];
    }
    if (!choice) {
      log::ckpt().info("ckpt: no checkpoint step is complete for a restore");
      return std::nullopt;
    }
    if (!wanted || *wanted >= choice->world) {
      throw Error("rank " + (wanted ? std::to_string(*wanted) : std::string("?")) + " did not exist at step " +
                  std::to_string(choice->step) + " (world " + std::to_string(choice->world) + ")");
    }
    const uint32_t source = *wanted;
    // 3. Load: this host's memory first, then the peers that hold it, best first.
    LoadRequest request{ctx_.job, segment_store(), source, choice->step, place};
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
        if (auto segment = own->sealed_segment(choice->step)) loaded = load_mapped(request, *segment);
      }
      if (!loaded) loaded = load_local(request);
      for (const auto& holder : choice->holders[source]) {
        if (loaded) break;
        const auto& report = reports[holder];
        if (report.address == ctx_.agent_addr) continue;  // this host: load_local looked already
        LoadRequest bounded = request;
        bounded.max_bytes = ckpt::promised_bytes(reports, source, choice->step, holder);
        loaded = load_from_peer(bounded, ckpt_service::TransferPeer{report.address, ctx_.ckpt_hello}, report.holder);
      }
    } catch (const PlacerFailed& e) {
      placer_failed = e.what();
    }
    // 4. Everyone loaded, or everyone tries an older step, or (a placer refused) everyone stops.
    const std::string outcome = !placer_failed.empty() ? "E" + placer_failed : loaded ? "1" : "0";
    store.set(prefix + "ok/" + std::to_string(rank), to_bytes(outcome));
    keys.clear();
    for (int r = 0; r < world; ++r) keys.push_back(prefix + "ok/" + std::to_string(r));
    const auto oks = store.multi_get(keys, ctx_.rendezvous_timeout);
    for (size_t r = 0; r < oks.size(); ++r) {
      if (!oks[r].empty() && oks[r].front() == 'E') {
        const std::string why(oks[r].begin() + 1, oks[r].end());
        throw Error("restore of step " + std::to_string(choice->step) + " stopped by rank " + std::to_string(r) +
                    ": " + why);
      }
    }
    const bool all = std::all_of(oks.begin(), oks.end(), [](const comm::Bytes& b) { return b == comm::Bytes{'1'}; });
    if (all) {
      log::ckpt().info("ckpt: restored rank {} step {} from {} ({} in {:.3f} s)", source, choice->step, loaded->source,
                       place ? "in place" : std::to_string(loaded->data.size()) + " bytes", loaded->seconds);
      return loaded;
    }
    log::ckpt().warn("ckpt: step {} could not be loaded by every rank; trying an older one", choice->step);
    if (choice->step == 0) return std::nullopt;
    at_most = choice->step - 1;
  }
}

}  // namespace shoal::session

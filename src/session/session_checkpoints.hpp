// SessionCheckpoints: the trainer's side of in-memory checkpoints, shared by embedded and connected
// sessions. Saves go into this host's shared memory through a RankStore, then the agent is told (it
// replicates). Restores agree on a step through the epoch's rendezvous store, then load the version
// from this host's memory or fetch it from a peer's agent.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/warn_limiter.hpp"
#include "ckpt_service/service.hpp"
#include "ckpt_shm/rank_store.hpp"
#include "ckpt_shm/report_check.hpp"
#include "ckpt_shm/restore_choice.hpp"
#include "ckpt_shm/restore_plan.hpp"
#include "comm_wrap/rendezvous_store.hpp"
#include "net/stream_hello.hpp"
#include "shoal/checkpoint.hpp"
#include "shoal/communicator.hpp"

namespace shoal::session {

struct CheckpointContext {
  std::string job;
  std::string store;                                            // this host's segment names
  bool store_by_lineage = false;  // ...after the first view: ckpt::store_for_lineage(store, its lineage)
  std::string holder;                                           // this host's member name
  std::string agent_addr;                                       // "ip:port" of this host's agent
  net::OutgoingHello ckpt_hello;                                // opens CKPT_STREAM connections as this member
  std::function<void(uint32_t rank, uint64_t step)> committed;  // tells the agent
  // Asks the agent how safe a local rank's newest version is; an error when it cannot answer.
  std::function<Result<ckpt_service::RankSafety>(uint32_t rank)> safety;
  std::chrono::milliseconds rendezvous_timeout{30'000};
  // Peer hosts that keep a copy of each version (`--ckpt-replicas`); nullopt when the agent does not say.
  std::optional<uint32_t> replicas;
};

class SessionCheckpoints {
 public:
  explicit SessionCheckpoints(CheckpointContext context) : ctx_(std::move(context)) {}

  std::unique_ptr<CheckpointSave> begin_save(uint64_t step, uint32_t rank, uint32_t world,
                                             const std::vector<CheckpointBuffer>& buffers);
  // Session::prepare_save: readies the memory of the rank's next save of `buffers`.
  void prepare(uint32_t rank, uint32_t world, const std::vector<CheckpointBuffer>& buffers);
  // `store` is the rendezvous store of comm's epoch, scoped to comm's attempt within it; `expected[r]` is
  // the member comm's view gives rank r and its agent's address: a report of rank r naming anyone else is
  // ignored (ckpt::drop_foreign_reports). With `place`, the buffers go where it says
  // (Session::restore_into), else into the result's bytes.
  std::optional<RestoredCheckpoint> restore(Communicator& comm, uint32_t attempt, comm::RendezvousStore& store,
                                            std::span<const ckpt::ExpectedHolder> expected,
                                            std::optional<uint32_t> saved_rank, const RestorePlacer* place = nullptr);
  // Reports ignored because they named another holder or address than the view gives their rank.
  uint64_t foreign_reports() const { return foreign_reports_.load(std::memory_order_relaxed); }
  // Session::wait_checkpoint_safe for every rank this process saved as.
  bool wait_safe(uint64_t step, std::chrono::milliseconds timeout);
  // A view was committed: with store_by_lineage, the first one names the segments (as the agent's
  // checkpoint service names them). Before the view reaches the trainer.
  void follow_view(uint64_t lineage);

  // Session::agree_restore, version_buffers and read_ranges (session_ranges.cpp).
  std::optional<RestorePoint> agree(Communicator& comm, uint32_t attempt, comm::RendezvousStore& store,
                                    std::span<const ckpt::ExpectedHolder> expected, uint64_t at_most_step);
  std::vector<RestoredCheckpoint::Entry> version_buffers(uint64_t step, uint32_t saved_rank);
  std::string read_ranges(uint64_t step, uint32_t saved_rank, const std::vector<ByteRange>& ranges);

 private:
  // What this host holds, exchanged through `store` under `prefix`: every rank's report, in rank order,
  // those naming another member than the view gives that rank dropped.
  std::vector<ckpt::HolderReport> collect_reports(Communicator& comm, comm::RendezvousStore& store,
                                                  const std::string& prefix,
                                                  std::span<const ckpt::ExpectedHolder> expected);
  // This host's report under `prefix`, written by the lowest rank the view places on it (report_writers).
  void publish_report(Communicator& comm, comm::RendezvousStore& store, const std::string& prefix,
                      std::span<const ckpt::ExpectedHolder> expected);
  // Rank 0: the restore planned from every host's report (ckpt::plan_restore), one value per host.
  void plan_for_all(Communicator& comm, comm::RendezvousStore& store, const std::string& prefix,
                    std::span<const ckpt::ExpectedHolder> expected, bool by_saved_rank, uint64_t at_most);
  // This rank's part of rank 0's plan; nullopt: no step is complete. Throws on a refusal or a plan naming
  // a holder outside the view.
  std::optional<ckpt::RankPlan> read_plan(Communicator& comm, comm::RendezvousStore& store, const std::string& prefix,
                                          std::span<const ckpt::ExpectedHolder> expected);
  // Writes this rank's outcome ("1" loaded, "0" not, "E<why>" stop); rank 0 reads all and writes the
  // verdict every rank returns: "1" all loaded, "0" try an older step, "E<message>" stop.
  std::string verdict(Communicator& comm, comm::RendezvousStore& store, const std::string& prefix,
                      const std::string& outcome, uint64_t step);
  // The number of this restore (or agreement) on comm's (epoch, attempt): makes rendezvous keys unique.
  uint64_t next_restore_call(const Communicator& comm, uint32_t attempt);
  // A ranged read of (step, saved_rank) (empty ranges: the table only), local memory first, then the
  // holders agree() found; returns the version's description and its source. Throws as read_ranges.
  std::pair<ckpt::VersionInfo, std::string> read_version_ranges(uint64_t step, uint32_t saved_rank,
                                                                const std::vector<ByteRange>& ranges);

  // The segment prefix in use (ctx_.store, resolved by follow_view).
  std::string segment_store() const;

  // Under mu_: the rank's store, opened (again, for another world) when needed.
  std::shared_ptr<ckpt::RankStore>& store_for(uint32_t rank, uint32_t world);

  CheckpointContext ctx_;
  mutable std::mutex mu_;
  bool store_resolved_ = false;
  std::map<uint32_t, std::shared_ptr<ckpt::RankStore>> stores_;  // per rank this process saved as
  std::shared_ptr<std::map<uint32_t, uint64_t>> last_committed_ =  // per rank: its newest step sealed here
      std::make_shared<std::map<uint32_t, uint64_t>>();
  // (epoch, attempt) -> restores begun on that communicator: makes rendezvous keys unique.
  std::map<std::pair<uint64_t, uint32_t>, uint64_t> restores_;
  std::atomic<uint64_t> foreign_reports_{0};
  // What the last agree() settled on: its step and the reports naming the holders of each saved rank's
  // version of it (choice.holders), for read_ranges.
  struct Agreed {
    uint64_t step = 0;
    std::vector<ckpt::HolderReport> reports;
    std::vector<std::vector<size_t>> holders;
  };
  std::optional<Agreed> agreed_;              // under mu_
  std::atomic<uint64_t> ranged_refused_{0};  // copies a ranged read refused (verification)
  log::WarnLimiter warn_{std::chrono::seconds(60)};  // under mu_
};

}  // namespace shoal::session

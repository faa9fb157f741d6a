// SessionCore: what every shoal::Session does whatever feeds it: it follows the committed views and
// the failures of their members, aborts the communicator of a view that lost a member or was
// superseded, and builds the next one through the agents' rendezvous store. An embedded session feeds
// it from the agent on its own thread; a connected session from a local agent's control socket.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <set>

#include "health/trainer_stats.hpp"
#include "membership/view.hpp"
#include "net/stream_hello.hpp"
#include "session/rebuild_decision.hpp"
#include "session/rendezvous_client.hpp"
#include "session/session_checkpoints.hpp"
#include "shoal/health.hpp"
#include "shoal/session.hpp"
#include "wire/cluster_key.hpp"

namespace shoal::session {

// Who this rank is, known once its agent runs.
struct SessionIdentity {
  std::string name;  // the agent's member name
  uint64_t generation = 0;
  uint32_t slot = 0;                    // which of the member's ranks this session drives
  std::string bind_ip;                  // where collectives listen: the agent's advertised IP
  net::OutgoingHello rendezvous_hello;  // opens RENDEZVOUS connections as this member
  CheckpointContext checkpoints;        // job, store, agent address, CKPT_STREAM hello, commit notice
  // Prefixes every rendezvous key this process uses: empty, or "round/R/" for the R-th set of workers a
  // launcher started for the same view (SHOAL_WORKER_ROUND), so that they never read the keys (Gloo
  // addresses, restore reports) of the workers they replace.
  std::string key_scope;
  // The cluster's key ring, which seals and checks the timing records of node health
  // (health/record_seal.hpp); nullptr in an open cluster. Read once at start: a key rotated in later (SIGHUP)
  // reaches the records only when the trainer starts again.
  std::shared_ptr<const wire::KeyRing> keys;
};

class SessionCore : public Session {
 public:
  explicit SessionCore(SessionOptions options) : opt_(std::move(options)) {}

  uint64_t latest_epoch() const override;
  RankInfo wait_for_view(uint64_t after_epoch, std::chrono::milliseconds timeout) override;
  std::shared_ptr<Communicator> communicator() override;
  RankInfo ranks() const override;
  void on_view_change(std::function<void(uint64_t epoch)> callback) override;
  std::unique_ptr<CheckpointSave> begin_save(Communicator& comm, uint64_t step,
                                             const std::vector<CheckpointBuffer>& buffers) override;
  void prepare_save(Communicator& comm, const std::vector<CheckpointBuffer>& buffers) override;
  std::optional<RestoredCheckpoint> restore(Communicator& comm, std::optional<uint32_t> saved_rank) override;
  std::optional<RestoredCheckpoint> restore_into(Communicator& comm, const RestorePlacer& place,
                                                 std::optional<uint32_t> saved_rank) override;
  bool wait_checkpoint_safe(uint64_t step, std::chrono::milliseconds timeout) override;
  std::optional<uint32_t> checkpoint_replicas() const override;
  std::optional<RestorePoint> agree_restore(Communicator& comm) override;
  std::optional<RestorePoint> agree_restore_at_most(Communicator& comm, uint64_t at_most_step) override;
  std::vector<RestoredCheckpoint::Entry> version_buffers(uint64_t step, uint32_t saved_rank) override;
  std::string read_ranges(uint64_t step, uint32_t saved_rank, const std::vector<ByteRange>& ranges) override;
  std::unique_ptr<EpochStore> store(Communicator& comm) override;
  std::vector<std::byte> state_seal(Communicator& comm, int sender, std::span<const std::byte> data) override;
  bool state_seal_valid(Communicator& comm, int sender, std::span<const std::byte> data,
                        std::span<const std::byte> seal) override;
  bool drain_requested() const override { return drain_requested_.load(); }
  void report_drained(uint64_t step) override { (void)step; }

  // The member (host) of each rank of `comm`, in rank order; empty when `comm` is not the current one.
  std::vector<std::string> rank_hosts(const Communicator& comm) const;
  // The elastic loop's latest straggler verdict, for this session's agent (shoal health, status, metrics).
  // From the loop's thread; must not block.
  virtual void report_health(const JobHealth& health) { (void)health; }
  // What this rank's run lost so far (shoal::RunReport), for its agent (shoal status, metrics). From the
  // loop's thread; must not block for long.
  virtual void report_trainer_stats(const health::TrainerStats& stats) { (void)stats; }
  // The key ring of the timing records (SessionIdentity::keys); nullptr in an open cluster.
  std::shared_ptr<const wire::KeyRing> health_keys() const;

 protected:
  // Before the first view arrives.
  void set_identity(SessionIdentity identity);
  // A view was committed.
  void view_committed(const membership::View& view);
  // A member is dead or left (gossip's verdict, with the generation it concerns).
  void member_failed(const std::string& name, uint64_t generation, const char* state);
  // The communicator of `epoch` (and older) cannot work any more (the agent's verdict, for a session that
  // does not see member events itself).
  void epoch_broken(uint64_t epoch, const std::string& why);
  // A member reported failed answers again in the same generation (it refuted gossip's verdict). When
  // every member reported failed in the broken epoch is back, no view will remove anyone: the grace ends
  // at once and the same view is rebuilt (issue 26's refuted death), instead of after kUnconfirmedFailureGrace.
  void member_back(const std::string& name, uint64_t generation);
  // The agent says every failure it reported in `epoch` was taken back (a connected session's feed).
  void failures_taken_back(uint64_t epoch);
  // The agent says this host drains (Session::drain_requested).
  void drain_asked() { drain_requested_ = true; }
  // The source of views is gone: every wait ends with an error.
  void source_stopped(const std::string& why);
  // A collective's connection to `name`'s rank closed or was reset: the session's agent, if it can be
  // told, probes the member at once (gossip's hint_failed). Called on the trainer's thread.
  virtual void peer_connection_broke(const std::string& /*name*/, uint64_t /*generation*/) {}
  // For error messages: why no view is coming (the keeper's status), if known.
  virtual std::string view_status() const { return {}; }

  const SessionOptions opt_;

 private:
  using Clock = std::chrono::steady_clock;
  // How long a member's failure (gossip's verdict, or the agent's) is waited out for the view that
  // removes it. When none comes (gossip took the member back under loss and the keeper removed nobody),
  // the view is used again and its communicator rebuilt as it stands: waiting longer would wait for ever.
  static constexpr std::chrono::milliseconds kUnconfirmedFailureGrace{5'000};
  // How long a collective in flight may still finish when its view ends without a failed member (a
  // graceful leave, a join): enough for data already sent, short against a rebuild.
  static constexpr std::chrono::milliseconds kFinishGrace{200};

  // Under mu_: what decide_rebuild() and on_build_failed() decide from.
  RebuildState rebuild_state() const;
  // Under mu_: a member of `epoch` (or a newer one) was reported failed less than the grace ago.
  bool fresh_failure(uint64_t epoch) const;
  // Under mu_: records a failure verdict about `epoch`.
  void mark_broken(uint64_t epoch);
  // Under mu_: the view holds this rank and no failure of a member of it is fresh.
  bool usable(const membership::View& view) const;
  bool includes_me(const membership::View& view) const;
  // The rendezvous store of `view`'s epoch, served by its rank 0's agent; gives up when the view is superseded.
  NetworkRendezvousStore::Options store_options(const membership::View& view);
  RankInfo rank_info(const membership::View& view) const;
  // The key prefix of `attempt` of a view's communicator (and of what is built on it: restores, stores).
  std::string scope(uint32_t attempt) const;
  // The view (and attempt) of `comm` when it is the session's current communicator; else throws
  // ViewChanged naming `what` was asked.
  std::pair<membership::View, uint32_t> view_of(const Communicator& comm, const char* what) const;
  // restore() and restore_into(): `place` null for the former.
  // Under mu_'s protection, the checkpoints of the identity; throws when there are none yet.
  SessionCheckpoints& checkpoints_or_throw(const char* what);
  std::optional<RestoredCheckpoint> restore_with(Communicator& comm, std::optional<uint32_t> saved_rank,
                                                 const RestorePlacer* place);
  // Outside mu_: rendezvous and connect, under the keys of `attempt`; throws ViewChanged when the view
  // moves on meanwhile, or when a peer fails the build.
  std::shared_ptr<Communicator> build(const membership::View& view, std::shared_ptr<Communicator> previous,
                                      const std::optional<membership::View>& previous_view, uint32_t attempt);
  // Outside mu_: the rebuild barrier after attempt `failed` of `view`'s epoch failed. Every rank says
  // so in the epoch's store and waits for all the others, so that all of them build attempt failed+1
  // together (a rank still inside a collective of the failed attempt gets there once its peers' aborts
  // end that collective). Throws ViewChanged when the view moves on meanwhile, Timeout at `deadline`.
  void agree_on_retry(const membership::View& view, uint32_t failed, Clock::time_point deadline);

  SessionIdentity id_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::optional<membership::View> latest_;
  // The newest epoch a member of which was reported failed, and when. Within the grace only a newer
  // view is built; after it, this one again (see kUnconfirmedFailureGrace).
  uint64_t broken_epoch_ = 0;
  Clock::time_point broken_since_{};
  // Under mu_: the members (name, generation) reported failed in broken_epoch_ and not back since.
  std::set<std::pair<std::string, uint64_t>> unconfirmed_;
  // Under mu_: ends the grace of broken_epoch_ (every failure in it was taken back).
  void end_grace(const char* why);
  std::shared_ptr<Communicator> comm_;
  std::optional<membership::View> comm_view_;  // the view comm_ was built for
  uint32_t comm_attempt_ = 0;                  // comm_'s attempt within its epoch
  // A communicator (or a build) that failed with every member of its view alive: its epoch and attempt.
  std::optional<FailedAttempt> failed_attempt_;
  RankInfo comm_ranks_;
  std::vector<std::function<void(uint64_t)>> callbacks_;
  std::string stopped_;                              // not empty: the source stopped, and why
  std::unique_ptr<SessionCheckpoints> checkpoints_;  // set with the identity
  std::atomic<bool> drain_requested_{false};
};

}  // namespace shoal::session

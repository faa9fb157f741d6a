// CheckpointService: the agent's part of in-memory checkpoints. It replicates each version a local
// rank commits to the peers that the placement function names for this member, serves pushes from
// peers (keeping replicas in this host's shared memory, within the memory budget) and fetches of any
// version this host holds. Bulk bytes move on threads of their own, never on the agent's loop.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "ckpt_service/admission.hpp"
#include "ckpt_service/inherited_versions.hpp"
#include "ckpt_service/persister.hpp"
#include "ckpt_service/placed_view.hpp"
#include "ckpt_service/transfer.hpp"
#include "ckpt_shm/held_scan.hpp"
#include "ckpt_shm/replica_store.hpp"
#include "control/replies/ckpt_ls.hpp"
#include "membership/view.hpp"
#include "net/stream_hello.hpp"
#include "net/stream_listener.hpp"

namespace shoal::ckpt_service {

struct CheckpointConfig {
  std::string job;        // the job's name: the identity every version carries
  // Whether someone chose `job` for this run (--job, Slurm's job id, a session's job). When not (the
  // default name, shared by every run of a cluster id), versions found in /dev/shm at start are set
  // aside until the first view tells whether they can be this run's (inherited_versions.hpp).
  bool job_named = false;
  std::string store;      // this host's segment names (default: the job; tests give hosts sharing a machine their own)
  // Nobody named the job or the store (the agent's and a session's default): the segments are named after
  // the cluster's lineage too, store_for_lineage(store, lineage), decided at the first committed view. So
  // two clusters of one id on one host, or a new run and what an earlier one left, never share a segment.
  bool store_by_lineage = false;
  uint32_t replicas = 1;  // R: peers that keep a copy of each version
  uint64_t budget_bytes = 0;   // replicas plus local versions on this host; 0: no limit
  uint32_t max_transfers = 8;  // concurrent inbound transfers; more are refused (the sender retries later)
  uint32_t keep_per_rank = 2;  // replicas kept of each peer rank, newest steps
  std::chrono::milliseconds stall_timeout{10'000};
  // A whole transfer's deadline: this allowance plus its announced bytes at this floor rate (transfer.hpp).
  uint64_t transfer_floor_bytes_per_s = kTransferFloorBytesPerS;
  std::chrono::milliseconds transfer_allowance{30'000};
  std::string persist_dir;    // also persist each local rank's newest version here; empty: not at all
  uint32_t persist_keep = 2;  // steps kept per rank in persist_dir
  // The share of the time the replicator may spend streaming (1..100 percent): after a push that took
  // t of CPU time, it rests t * (100 - duty) / duty before the next, which is then the newest version
  // saved (latest wins). Caps the CPU replication takes from trainers that save every step.
  uint32_t replicate_duty_percent = 20;
  // Who is expected to have written this host's segments: its trainers the slots, this agent the replicas
  // (ckpt_shm/segment_trust.hpp). Both this process's user unless told otherwise.
  ckpt::SegmentOwners owners{};
  // Leave /dev/shm as it is when the agent leaves on purpose (default: its segments are removed then).
  bool keep_on_exit = false;
};

// What remove_segments_at_exit did.
struct ExitCleanup {
  size_t removed = 0;  // segments unlinked
  uint64_t bytes = 0;  // their sizes
  size_t left = 0;     // refused objects named like this store's, never touched, or ones unlink failed on
};

struct CheckpointCounters {
  uint64_t committed = 0;     // versions local ranks sealed (as the agent was told)
  uint64_t pushed = 0;        // replicas stored at a peer
  uint64_t pushed_bytes = 0;  // their bytes
  uint64_t push_skipped = 0;  // the peer already held it
  uint64_t push_failed = 0;
  uint64_t push_superseded = 0;  // cancelled in flight by a newer version of the same rank
  uint64_t received = 0;         // replicas kept here
  uint64_t receive_refused = 0;  // bad streams, checksum mismatches, budget
  uint64_t fetches_served = 0;
  uint64_t evicted = 0;  // replicas dropped for the budget
  // Requests refused before any byte moved, by cause (admission.hpp): pushes, then fetches.
  std::array<uint64_t, kRefusals> push_unauthorized{};
  std::array<uint64_t, kRefusals> fetch_unauthorized{};
};

// How far replication trails a local rank's saves: the newest step committed here and the newest that
// reached every peer it was sent to (nullopt: none yet).
struct ReplicationLag {
  uint32_t rank = 0;
  uint64_t committed = 0;
  std::optional<uint64_t> replicated;
};

// How safe a local rank's newest checkpoint is: the newest step committed here, the newest held by
// every peer placement names (`holders` of them in the current view; 0: there is no peer to hold it),
// and with a persist directory the newest step written there.
struct RankSafety {
  uint64_t committed = 0;
  std::optional<uint64_t> replicated;
  uint32_t holders = 0;
  bool persisting = false;
  std::optional<uint64_t> persisted;
  // Whether `step` (or a newer one) is as safe as the configuration asks.
  bool safe(uint64_t step) const {
    return (holders == 0 || (replicated && *replicated >= step)) && (!persisting || (persisted && *persisted >= step));
  }
};

class CheckpointService {
 public:
  // `hello` makes the CKPT_STREAM hello of this member (valid once the agent has started).
  CheckpointService(CheckpointConfig config, std::string self_name, std::function<net::OutgoingHello()> hello);
  ~CheckpointService();
  CheckpointService(const CheckpointService&) = delete;
  CheckpointService& operator=(const CheckpointService&) = delete;

  // Opens the replica store (adopting replicas from an earlier run) and the persist directory when one is
  // configured, and serves CKPT_STREAM on `listener`. With store_by_lineage the store is opened at the
  // first view instead (nothing is pushed or fetched before one).
  Status start(net::StreamListener& listener);
  // Cancels transfers in flight and joins every thread.
  void stop();
  // The agent is leaving: queue each local rank's newest version that persist_dir lacks (no-op without
  // one). persisting() tells when that is done.
  void flush_persisted();
  bool persisting() const;
  // The agent left the cluster on purpose: removes this store's segments from /dev/shm (its ranks' slots
  // and the replicas it kept for peers; never an object it does not trust). Call once nothing saves or
  // transfers any more (service_exit.cpp).
  ExitCleanup remove_segments_at_exit();

  // A committed view: its placement decides where local versions go. Re-offers the newest version of
  // each local rank, so a holder that replaced a failed one gets a copy. Any thread.
  void on_view(const membership::View& view);
  // A local rank sealed `step`: replicate it. Any thread; returns at once.
  void committed(uint32_t rank, uint64_t step);

  const CheckpointConfig& config() const { return cfg_; }
  // The segment prefix in use: config().store, or with store_by_lineage the lineage's (empty until the
  // first view). Any thread.
  std::string store() const;
  // Who is expected to have written this host's segments now: cfg.owners, the slots' owner as the last
  // trust_slot_writer set it. Any thread.
  ckpt::SegmentOwners owners() const;
  // A local trainer said it sealed a version, and the kernel named its user (the control socket's
  // SO_PEERCRED): the slots are that user's from now on. Under the systemd unit the agent runs as root
  // and trainers as their own users; without this every slot of theirs would be refused as foreign.
  // Only a caller at the control socket's local level (the agent's user, its group, root) may say so:
  // control/handlers.hpp. Any thread.
  void trust_slot_writer(const ckpt::SegmentOwner& writer);
  // What this host holds, read from /dev/shm.
  std::vector<ckpt::HeldSegment> held() const;
  CheckpointCounters counters() const;
  std::vector<ReplicationLag> replication_lag() const;
  RankSafety safety(uint32_t rank) const;  // service_safety.cpp
  // The `ckpt-ls` control reply; `verify` also checks every sealed version's data checksums.
  std::string ls_json(bool verify = false) const;

 private:
  static uint64_t pack(const ckpt::SegmentOwner& o) { return (uint64_t{o.uid} << 32) | o.gid; }
  struct Outbound;
  void replicate_loop();
  void replicate(uint32_t rank, uint64_t step);
  void serve(const net::StreamPeer& peer, wire::CkptRequest request, net::BlockingConn conn);
  void serve_push_request(const net::StreamPeer& peer, const wire::CkptRequest& request, net::BlockingConn& conn);
  // FETCH and FETCH_RANGES (service_fetch.cpp).
  void serve_fetch_request(const wire::CkptRequest& request, net::BlockingConn& conn);
  // Under mu_: admits a request or answers REFUSED, counting and logging (once per cause and kind).
  bool admit(const net::StreamPeer& peer, const wire::CkptRequest& request, net::BlockingConn& conn);
  // Under store_mu_: frees replica memory so that `incoming` more bytes of a replica of `rank` fit the
  // budget (spares of other ranks go first; the rank's own spare is the memory the receive reuses).
  Status make_room(uint32_t rank, uint64_t incoming);
  void reap_finished();
  // At start, with persist_dir: the newest persisted version of each rank that this host holds nothing
  // as new of in memory is loaded (verified) into a replica segment, so that after every host lost its
  // memory a restore finds it like any other holder's (service_disk.cpp).
  void load_persisted(const ckpt::PersistDir& dir);
  // At the first view, with persist_dir: the newest step for which every rank of its world has a file under
  // some member's directory of persist_dir (any member name: hosts that replace lost ones under other names
  // resume too; ckpt_shm/persisted_resume.hpp) is loaded, each rank by one member of `view`, unless held, and
  // the older whole steps, as many as persist_keep, for a restore to fall back to.
  void resume_persisted(const membership::View& view);
  // Rank -> the newest step of cfg_.job this host holds in memory, its own slots or replicas.
  std::map<uint32_t, uint64_t> newest_in_memory() const;
  // Loads `p` into a replica segment through `read` (which fills the memory it is given and validates it);
  // false, logged, when it does not fit, fails or is not kept.
  using DiskRead = std::function<Result<ckpt::VersionInfo>(const ckpt::PersistDir::Placement&)>;
  bool load_from_disk(const ckpt::PersistedVersion& p, const DiskRead& read);
  // `ckpt-ls`'s part on the persist directory (with persist_dir).
  control::PersistSection persist_section() const;
  TransferLimits limits(const std::atomic<bool>* cancel) const;
  // At the first view: removes the versions set aside at start when they are another run's.
  void settle_inherited(const membership::View& view);
  // Opens the replica store `name` (adopting what an earlier run of it kept) and, without a named job,
  // sets aside what it holds until settle_inherited; with persist_dir, loads what only the disk holds.
  Status open_store(const std::string& name);

  CheckpointConfig cfg_;
  std::string self_;
  std::function<net::OutgoingHello()> hello_;
  std::atomic<bool> stopping_{false};

  mutable std::mutex store_mu_;  // the replica store
  std::optional<ckpt::ReplicaStore> replicas_;
  mutable std::mutex name_mu_;  // store_ (taken alone, or after store_mu_: held() runs under it)
  std::string store_;           // store(): empty until open_store
  InheritedVersions inherited_;  // without job_named: what /dev/shm held at start, until the first view

  mutable std::mutex mu_;  // everything below
  std::condition_variable wake_;
  PlacedViewPtr view_;                       // the committed view, placed once at on_view (placed_view.hpp)
  PlacedViewPtr previous_view_;              // the view before view_: its ranks may still push (admission)
  std::map<uint32_t, uint64_t> pending_;     // rank -> newest committed step not yet replicated
  std::map<uint32_t, uint64_t> newest_;      // rank -> newest committed step seen
  std::map<uint32_t, uint64_t> replicated_;  // rank -> newest step every chosen peer holds
  uint32_t streaming_rank_ = 0;
  uint64_t streaming_step_ = 0;
  bool streaming_ = false;
  std::atomic<bool> cancel_stream_{false};  // the outbound stream in flight is superseded
  CheckpointCounters counters_;
  struct Inbound {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::list<Inbound> inbound_;
  uint32_t warned_refusals_ = 0;  // a bit per (kind, cause) already logged at warn
  std::map<std::pair<uint32_t, uint64_t>, std::string> origins_;  // (rank, step) -> member that pushed it here
  std::thread replicator_;
  std::atomic<uint64_t> slot_owner_{0};  // pack(): the slots' expected owner
  std::unique_ptr<CheckpointPersister> persister_;  // with persist_dir
  bool resume_checked_ = false;                     // resume_persisted ran (at the first view); under on_view's caller
};

}  // namespace shoal::ckpt_service

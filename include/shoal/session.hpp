// libshoal's handle for a trainer: join the job, wait until a committed view includes this rank, read
// the ranks, get a communicator for the current view, and be told when the view changes.
//
// A Session either embeds the agent in the trainer's process (one trainer per host; the agent runs on a
// thread of its own, exactly as `shoal agent` would), or follows a separate `shoal agent` over its
// control socket (one trainer per GPU slot). Both behave the same: when a member of the current view fails or leaves,
// the session aborts the current communicator at once, so the trainer's collective throws
// shoal::ViewChanged instead of hanging; communicator() then blocks until the next committed view and
// returns a communicator rebuilt for it. Thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "shoal/api.hpp"
#include "shoal/checkpoint.hpp"
#include "shoal/communicator.hpp"
#include "shoal/errors.hpp"
#include "shoal/store.hpp"

namespace shoal {

struct SessionOptions {
  std::string name;                    // member name, stable across restarts (default: the host name)
  std::string bind = "0.0.0.0:7946";   // host:port of the agent's UDP+TCP port (port 0: any)
  std::string advertise;               // host others reach us at (default: the bind host)
  std::vector<std::string> seeds;      // host:port of members to join through; empty: a new cluster
  std::string cluster;                 // cluster id; packets of other clusters are refused
  uint32_t slots = 1;                  // embedded: the host's ranks; only 1 (one trainer per host) is supported
  uint32_t slot = 0;                   // connect(): which slot of the agent this trainer drives
  uint32_t min_hosts = 1;
  uint32_t max_hosts = 0;              // 0: no limit
  std::string control_path;            // embedded: where to serve the control socket, as `shoal agent` does
                                       // (empty: the default path for the name, /run/shoal/NAME.sock or the
                                       // like, skipped with a warning when another process serves it;
                                       // "none": no socket). connect(): the agent's control socket
  std::string log_spec;                // e.g. "warn,membership=info"; empty: SHOAL_LOG or info
  std::string job;                     // embedded: checkpoints' job name (default: the cluster id, or "shoal")
  std::string host;                    // embedded: the machine as replica placement sees it (default: the host
                                       // name); trainers sharing a machine as separate hosts each set their own
  // embedded: this host's segment names (default: the job, or JOB-HOST with host; with neither `job` nor
  // `ckpt_store` given, followed by "-" and the cluster's lineage, so that no other cluster sees them)
  std::string ckpt_store;
  uint32_t ckpt_replicas = 1;          // embedded: peers that keep a copy of each checkpoint version
  uint32_t ckpt_replicate_duty = 20;   // embedded: the percent of the time replication may stream (see
                                       // `shoal agent --ckpt-replicate-duty`); 100: no rest between pushes
  std::string ckpt_dir;                // embedded: also persist each saved version to this directory, in the
                                       // background (empty: memory only); leave() waits for it, up to 60 s
  std::string key_file;                // embedded: the cluster key file (see `shoal keygen`); empty: the file
                                       // SHOAL_KEY_FILE names, if set. connect(): taken from the agent
  bool insecure = false;               // embedded: run with no cluster key (any host that reaches the port may
                                       // join); without a key and without this, start() refuses
  bool leave_on_sigterm = false;       // embedded: on SIGTERM (scancel, systemctl stop) leave the cluster
                                       // gracefully, so the others commit a view without this host at once,
                                       // then end the process as SIGTERM would; a second SIGTERM ends it at
                                       // once. Off: SIGTERM keeps the program's own disposition
  bool evict_stragglers = false;       // embedded: the agent removes a host that the straggler verdict (ElasticLoop's
                                       // node health) has named for evict_after from the next committed view, by
                                       // majority, never below min_hosts, one per evict_window; readmitted after
                                       // evict_hold_down. Needs a cluster key (start() refuses it with insecure)
  std::chrono::milliseconds evict_after{3'000};
  std::chrono::milliseconds evict_window{60'000};
  std::chrono::milliseconds evict_hold_down{60'000};
  std::string backend = "gloo";        // "gloo": CPU buffers over TCP; "nccl": GPU buffers (builds with NCCL)
  int cuda_device = -1;                // nccl: the device of this rank; -1: the local rank
  std::chrono::milliseconds view_timeout{120'000};        // communicator(): longest wait for a view
  std::chrono::milliseconds rendezvous_timeout{30'000};   // one rendezvous wait
  std::chrono::milliseconds collective_timeout{300'000};  // a collective that makes no progress
};

// This rank's place in a committed view (torchrun's names in comments).
struct RankInfo {
  uint64_t epoch = 0;
  uint64_t view_hash = 0;
  int rank = -1;              // RANK
  int world_size = 0;         // WORLD_SIZE
  int local_rank = 0;         // LOCAL_RANK
  int local_world_size = 0;   // LOCAL_WORLD_SIZE
  int node_rank = 0;          // GROUP_RANK
  int node_count = 0;
  std::string master_addr;    // MASTER_ADDR: the host of rank 0
  std::vector<std::string> members;  // member names in rank order of their first slot
  // Rebuilds of this epoch's communicator after a collective failed with no member lost (a connection
  // reset, a collective timeout): 0 for the first build of each view.
  uint32_t attempt = 0;
};

// Starting or connecting a session sets SIGPIPE to SIG_IGN when the program left it at SIG_DFL (a peer
// that closes its connection must cost an error, not the process); a handler the program installed stays.
class SHOAL_API Session {
 public:
  // Starts the embedded agent and joins. Throws shoal::Error with what to change (port in use, ...).
  static std::unique_ptr<Session> start(const SessionOptions& options);
  // Follows the `shoal agent` whose control socket is options.control_path, driving its GPU slot
  // options.slot (one trainer process per slot). Only control_path, slot, backend, cuda_device and the
  // timeouts are used. With an empty control_path, SHOAL_CONTROL and SHOAL_SLOT from the environment
  // (set by `shoal agent --workers connect -- COMMAND`) give both. Throws shoal::Error when no agent
  // answers there.
  static std::unique_ptr<Session> connect(const SessionOptions& options);

  virtual ~Session() = default;

  // The newest committed epoch this member knows (0: none yet).
  virtual uint64_t latest_epoch() const = 0;
  // Blocks until a committed view newer than `after_epoch` includes this member; returns its ranks.
  // Throws shoal::Timeout after `timeout`.
  virtual RankInfo wait_for_view(uint64_t after_epoch, std::chrono::milliseconds timeout) = 0;
  // The communicator of the newest view that includes us, built (rendezvous through the agents) if it
  // is not built yet or was aborted. Blocks until such a view exists; throws shoal::Timeout if none
  // comes within view_timeout, or ViewChanged if the view changes again while building (call again).
  // A communicator that failed while its view stands and every member of it lives (a connection reset,
  // a collective timeout) is rebuilt for the same view once every rank of it has called here too.
  virtual std::shared_ptr<Communicator> communicator() = 0;
  // The ranks of the communicator communicator() last returned.
  virtual RankInfo ranks() const = 0;
  // Called on the agent's thread for every committed view (its epoch); keep it short.
  virtual void on_view_change(std::function<void(uint64_t epoch)> callback) = 0;
  // Leaves the job gracefully (the others commit a view without us at once) and stops the agent.
  virtual void leave() = 0;
  // The agent's address ("ip:port"), for seeding others.
  virtual std::string address() const = 0;

  // Begins saving this rank's state for `step`, as rank comm.rank() of comm.world_size() (see
  // checkpoint.hpp); `comm` is the communicator communicator() last returned, as for restore(). Throws
  // ViewChanged when it is no longer the session's current one, shoal::Error for bad names or no memory.
  virtual std::unique_ptr<CheckpointSave> begin_save(Communicator& comm, uint64_t step,
                                                     const std::vector<CheckpointBuffer>& buffers) = 0;
  // Readies this host's shared memory for a save of `buffers` as comm's rank, on a thread of the
  // library's: the first save of a size otherwise writes into memory that the kernel clears page by page
  // at first touch (several times the copy's cost). Call it once the state's size is known, before the
  // first save; each save readies its successor's memory itself. Throws like begin_save.
  virtual void prepare_save(Communicator& comm, const std::vector<CheckpointBuffer>& buffers) = 0;
  // Collective: every rank of `comm` calls it. Agrees on the newest step whose versions the ranks read
  // are complete and held by some host of the job, and loads them. By default each rank reads the version
  // its own host saved at that step (a survivor restores its own state from local memory), else the one
  // of saved rank (rank % saved world): data-parallel replicas hold the same state, so the version of a
  // rank that no new rank reads need not exist. With `saved_rank` (given on every rank), the step must be
  // complete for every rank of its world, and this rank loads that saved rank's version. nullopt on
  // every rank when no step qualifies. Throws ViewChanged when the world changes meanwhile, like a
  // collective.
  virtual std::optional<RestoredCheckpoint> restore(Communicator& comm,
                                                    std::optional<uint32_t> saved_rank = std::nullopt) = 0;
  // restore() without the intermediate copy: agrees on the step exactly as restore() does, then shows
  // `place` the version's layout and first buffer and copies every buffer straight into the memory it
  // names, verifying each checksum in the same pass (a copy that fails verification is retried from the
  // next holder). The result describes the step and its entries; its `data` stays empty. A version kept
  // in this host's memory is read in place; one held only by a peer is fetched first.
  virtual std::optional<RestoredCheckpoint> restore_into(Communicator& comm, const RestorePlacer& place,
                                                         std::optional<uint32_t> saved_rank = std::nullopt) = 0;
  // Ranged restores (a world of another size reads only the parts of each saved rank's version its new
  // shards need). agree_restore is collective, like restore(comm, saved_rank): every rank of `comm` calls
  // it, and all get the newest step that every rank of its saved world completed and whose versions some
  // host of the job still holds (this host's memory, a peer's replica, what an agent loaded from its
  // persist directory); nullopt on every rank when none. It remembers which hosts hold each saved rank's
  // version of that step, for the two calls below, which are not collective.
  virtual std::optional<RestorePoint> agree_restore(Communicator& comm) = 0;
  // The buffers (names and sizes, in saved order) of saved rank `saved_rank`'s version of `step`, a step
  // agree_restore returned: from this host's memory, else from a host that holds it. Throws shoal::Error
  // when no host gives it, VersionRefused when every copy found failed verification.
  virtual std::vector<RestoredCheckpoint::Entry> version_buffers(uint64_t step, uint32_t saved_rank) = 0;
  // Copies exactly the given byte ranges of that version into the caller's memory: from this host's
  // memory first, else from the holders agree_restore found (best first), trying the next one on any
  // failure; over the network only the 64 KiB checksum chunks covering the ranges move. Every chunk is
  // verified against the version's sealed checksums before a byte of it reaches `into`, so a caller's
  // memory only ever receives verified bytes (on failure some ranges may have been filled, with correct
  // bytes, and others not). Returns the source ("local" or the holder's member name). Throws
  // shoal::Error for an unknown buffer, a range outside its buffer or more than 65536 ranges (before
  // anything is read), or when no holder gives the version; VersionRefused when every copy found
  // failed verification.
  virtual std::string read_ranges(uint64_t step, uint32_t saved_rank, const std::vector<ByteRange>& ranges) = 0;
  // Blocks until the newest checkpoint this session saved, if its step is `step` or newer, is as safe
  // as the job is configured to keep it: held by every peer host that replica placement names (none
  // when the view has no other host) and, with a persist directory, written there. Returns false at
  // `timeout`, or when this session saved no such step. A trainer calls it before a normal exit.
  virtual bool wait_checkpoint_safe(uint64_t step, std::chrono::milliseconds timeout) = 0;
  // How many peer hosts keep a copy of each checkpoint version this session saves (the agent's
  // `--ckpt-replicas`; SessionOptions::ckpt_replicas when embedded); nullopt when the agent does not say
  // (an older one). With 0, a host lost takes its ranks' versions with it.
  virtual std::optional<uint32_t> checkpoint_replicas() const = 0;
  // The key-value store of comm's view (and attempt), served by the agents: empty when the view is new,
  // never shared with another view, its calls throw ViewChanged once the view is superseded or loses a
  // member. Throws ViewChanged when `comm` is no longer the session's current communicator.
  virtual std::unique_ptr<EpochStore> store(Communicator& comm) = 0;

  // State one rank of `comm` hands to the others over the trainers' own connections (Gloo's, NCCL's: the
  // cluster key does not protect them), such as a live training state after a view change. state_seal gives
  // the sender the seal to send with `data`: a tag bound to comm's view, its attempt and the sending rank,
  // under a key derived from the cluster key (empty in a cluster without one). A receiver calls
  // state_seal_valid with the sending rank before it parses a byte of `data`. Both throw ViewChanged when
  // `comm` is no longer the session's current communicator.
  virtual std::vector<std::byte> state_seal(Communicator& comm, int sender, std::span<const std::byte> data) = 0;
  virtual bool state_seal_valid(Communicator& comm, int sender, std::span<const std::byte> data,
                                std::span<const std::byte> seal) = 0;

  // agree_restore bounded: the newest such step no newer than `at_most_step` (a load that found a step
  // unreadable, every copy of some chunk corrupt, goes on to an older one). Collective likewise: every
  // rank of `comm` calls it with the same bound. (Last in this class, so that the virtual functions
  // declared before it keep their places in the vtable.)
  virtual std::optional<RestorePoint> agree_restore_at_most(Communicator& comm, uint64_t at_most_step) = 0;

  // Drain (`shoal drain`, a spot notice, SIGTERM with `--drain-on-sigterm`): true once this rank's host was
  // asked to leave at a step boundary. The elastic loops (ElasticLoop, shoal.torch's) check it between steps
  // through shoal::DrainRule; a loop of one's own may too. (After agree_restore_at_most: the vtable grows at
  // its end only.)
  virtual bool drain_requested() const = 0;
  // This rank has drained: the checkpoint of its last step is held by a peer (Session::wait_checkpoint_safe),
  // or the wait gave up. The host's agent leaves the cluster once every rank of the host said so (or at the
  // drain's deadline); the trainer then ends (its loop returned). Does nothing when no drain was requested.
  virtual void report_drained(uint64_t step) = 0;
};

}  // namespace shoal

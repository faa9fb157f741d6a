// ReplicaStore: the versions this host keeps of OTHER hosts' ranks, in its own shared memory, so that
// a rank whose host died can be restored from a peer. Owned by the host's agent; the segments outlive
// the agent, and an agent restarted on the same host adopts them again.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.hpp"
#include "ckpt_shm/host_budget.hpp"
#include "ckpt_shm/replica_names.hpp"
#include "ckpt_shm/shm_segment.hpp"

namespace shoal::ckpt {

struct ReplicaStoreConfig {
  std::string job;             // the job: the identity every replica's version header must carry
  std::string store;           // names the segments (see replica_segment_name); empty: the job. Hosts that share
                               // a machine (tests, demos) each need their own.
  uint32_t keep_per_rank = 2;  // sealed replicas kept of each rank, newest steps; at least 1
};

// Why begin() or complete() refused. The first three are ordinary protocol outcomes that a sender
// acts on; the others are faults.
enum class ReplicaCause : uint8_t {
  already_held,    // a sealed replica of (rank, step) is kept here: the sender can skip it
  receiving,       // a receive of (rank, step) is already in progress here
  superseded,      // keep_per_rank newer replicas of the rank are kept: this one would be dropped at once
  bad_request,     // an argument out of range (a size too small to hold a version header)
  bad_version,     // complete(): the span does not hold a sealed, well-formed version
  wrong_identity,  // complete(): a sealed version, but of another (job, rank, step)
  no_memory,       // shared memory could not be created or mapped (often: /dev/shm is full)
  untrusted,       // an object of the replica's name exists that this user did not write (segment_trust.hpp)
};
inline constexpr size_t kReplicaCauses = 8;
std::string_view name(ReplicaCause c);

struct ReplicaError {
  ReplicaCause cause;
  std::string message;
};

namespace detail {
// The receives in progress, shared between a store and its Incomings so that an Incoming may safely
// outlive (or be moved away from) the store that began it.
struct Receiving {
  std::map<std::pair<uint32_t, uint64_t>, uint64_t> bytes;  // (rank, step) -> segment size
};
}  // namespace detail

// One receive in progress: a fresh segment for (rank, step), sized as the sender announced. The
// receiver writes the version into bytes() (the self-describing prefix, then the buffers) and seals
// it, then hands it to ReplicaStore::complete. Destroying an Incoming that was not completed unlinks
// its segment: a receive cut short leaves nothing behind in /dev/shm.
class Incoming {
 public:
  Incoming() = default;
  ~Incoming();
  Incoming(Incoming&& other) noexcept = default;
  Incoming& operator=(Incoming&& other) noexcept;
  Incoming(const Incoming&) = delete;
  Incoming& operator=(const Incoming&) = delete;

  bool active() const { return receiving_ != nullptr; }
  uint32_t rank() const { return rank_; }
  uint64_t step() const { return step_; }
  const std::string& segment_name() const { return segment_.name(); }
  std::span<std::byte> bytes() { return segment_.bytes(); }

 private:
  friend class ReplicaStore;
  Incoming(std::shared_ptr<detail::Receiving> receiving, ShmSegment segment, uint32_t rank, uint64_t step);
  // Ends the receive: forgets it and, unless `keep`, unlinks the segment. Idempotent.
  void finish(bool keep);

  std::shared_ptr<detail::Receiving> receiving_;  // null once finished or moved from
  ShmSegment segment_;
  uint32_t rank_ = 0;
  uint64_t step_ = 0;
};

// One replica or receive, for listings.
struct ReplicaReport {
  uint32_t rank = 0;
  uint64_t step = 0;
  uint32_t world = 0;   // the job's world size when the version was saved; 0: receiving, or unknown
  uint64_t bytes = 0;   // the segment's size
  bool sealed = false;  // false: a receive in progress
  std::string segment_name;
  uint64_t sequence = 0;  // the origin rank's commit order; 0 while receiving
};

// Not thread-safe: one agent owns the store and serializes every call (one thread, a strand, or a
// mutex). Incomings may be held across calls (a receive spans many reads from a socket), and several
// at once; writing into an Incoming's bytes() needs no lock, but completing, abandoning, assigning
// or destroying one touches the store's bookkeeping and must be serialized with the store's calls.
//
// Replicas are validated with data checksums skipped (structure, identity and meta checksum only):
// checking every buffer at open or at complete would read the whole replica for no benefit, because
// whoever restores from a replica decodes it with data checksums verified before using it.
class ReplicaStore {
 public:
  // Adopts the replica segments of the store already in /dev/shm. Segments that are unsealed or
  // invalid, or whose identity disagrees with their name, are left by receives that crashed: they
  // are unlinked and counted (discarded_at_open). Objects this user did not write (a link, a FIFO,
  // another user's file: segment_trust.hpp) are neither adopted nor touched (untrusted_at_open).
  // Then keep_per_rank is applied to every rank.
  static Result<ReplicaStore> open(ReplicaStoreConfig config);
  // Unlinks every replica segment of `store` (a config's store name) in /dev/shm, but no local slot
  // segment; Ok when there are none.
  static Status remove_all(std::string_view store);

  // Unlinks the spares (memory, no versions); the replicas stay for the next agent.
  ~ReplicaStore();
  ReplicaStore(ReplicaStore&&) noexcept = default;
  ReplicaStore& operator=(ReplicaStore&&) noexcept = default;
  ReplicaStore(const ReplicaStore&) = delete;
  ReplicaStore& operator=(const ReplicaStore&) = delete;

  // Starts receiving (rank, step) into a new segment of total_bytes bytes, replacing a leftover
  // that is not sealed. Refuses (cause already_held) when a sealed replica of (rank, step) is kept,
  // also one that appeared in /dev/shm since open; and refuses a step older than keep_per_rank
  // kept ones (superseded), or a receive of (rank, step) already in progress.
  Result<Incoming, ReplicaError> begin(uint32_t rank, uint64_t step, uint64_t total_bytes);
  // Keeps a received version once it is sealed and names (job, rank, step); otherwise unlinks its
  // segment and fails. Then drops the rank's oldest replicas beyond keep_per_rank (lowest step
  // first; the newest is never dropped). Fails too for an Incoming another store began.
  Status complete(Incoming&& incoming);
  // Unlinks the segment of a receive cut short (the same as destroying the Incoming).
  void abandon(Incoming&& incoming);

  // Every kept replica and every receive in progress, by (rank, step).
  std::vector<ReplicaReport> list() const;
  // The sealed replica's version bytes (its on-segment layout, as decode_version reads it). Valid
  // until the replica is dropped (drop, or keep_per_rank after a later complete) or the store dies.
  std::optional<std::span<const std::byte>> find(uint32_t rank, uint64_t step) const;
  // The sealed replica's mapping, shared: it stays mapped for the holder even after the replica is
  // dropped (its name unlinked), so a fetch can stream from it without a lock. nullptr when not kept.
  std::shared_ptr<const ShmSegment> share(uint32_t rank, uint64_t step) const;
  // Unlinks a kept replica to free its memory; Ok when none is kept. Refuses a receive in progress.
  Status drop(uint32_t rank, uint64_t step);

  // The kept replicas as the host budget counts them (all sealed). Receives in progress are left
  // out: plan_eviction would offer them first as unsealed dead weight. Add receiving_bytes() to the
  // need instead.
  std::vector<HeldVersion> held_versions() const;
  uint64_t receiving_bytes() const;
  // Spares: the memory of dropped replicas kept mapped, at most one per rank, so that the rank's next
  // receive writes into pages already in memory without ever overwriting a complete replica (see
  // begin). Not versions: neither listed nor found. Bytes of every spare, or of one rank's.
  uint64_t spare_bytes() const;
  uint64_t spare_bytes(uint32_t rank) const;
  // Unlinks every spare but `except_rank`'s (a budget needs the memory); returns the bytes freed.
  uint64_t drop_spares(std::optional<uint32_t> except_rank = std::nullopt);

  const ReplicaStoreConfig& config() const { return config_; }
  // Segments unlinked by open() because they were not a valid sealed replica of their name.
  uint64_t discarded_at_open() const { return discarded_at_open_; }
  // Objects named like replicas that open() left alone because this user did not write them.
  uint64_t untrusted_at_open() const { return untrusted_at_open_; }
  // Refusals of begin() and complete(), by cause.
  uint64_t refused_count(ReplicaCause cause) const { return refused_[static_cast<size_t>(cause)]; }

 private:
  struct Kept {
    std::shared_ptr<ShmSegment> segment;  // shared with fetches streaming from it
    uint32_t world = 0;
    uint64_t sequence = 0;
    uint64_t total_bytes = 0;  // the version's size; the segment may be larger
  };
  using Key = std::pair<uint32_t, uint64_t>;  // (rank, step)

  explicit ReplicaStore(ReplicaStoreConfig config);
  // The version in `segment` if it is a sealed, well-formed replica of (job, rank, step).
  Result<Kept, ReplicaError> validate(const ShmSegment& segment, uint32_t rank, uint64_t step) const;
  // Memory for a new receive that is already in memory (a fresh segment costs page faults that cap a
  // receive at about 1 GB/s), renamed to `object` and grown to total_bytes: the rank's spare, else its
  // oldest replica when keep_per_rank are held (it would be dropped once the new one is kept) and a
  // newer complete one stays meanwhile. Never the rank's only complete replica, never one a fetch is
  // streaming from. nullopt: create a new segment.
  std::optional<ShmSegment> reuse_memory(uint32_t rank, const std::string& object, uint64_t total_bytes);
  // Drops the rank's lowest steps beyond keep_per_rank; the first dropped becomes the rank's spare.
  void keep_newest(uint32_t rank);
  // Unlinks `segment`'s name, or keeps it as the rank's spare when the rank has none and no fetch
  // still streams from it.
  void retire(uint32_t rank, std::shared_ptr<ShmSegment> segment);
  Unexpected<ReplicaError> refuse(ReplicaCause cause, std::string message);

  ReplicaStoreConfig config_;
  std::map<Key, Kept> kept_;
  std::map<uint32_t, ShmSegment> spares_;  // by rank, named spare_segment_name(store, rank)
  std::shared_ptr<detail::Receiving> receiving_ = std::make_shared<detail::Receiving>();
  uint64_t discarded_at_open_ = 0;
  uint64_t untrusted_at_open_ = 0;
  std::array<uint64_t, kReplicaCauses> refused_{};
  uint32_t warned_causes_ = 0;  // a bit per ReplicaCause already logged at warn
};

}  // namespace shoal::ckpt

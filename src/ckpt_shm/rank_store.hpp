// RankStore: one rank's checkpoint versions in shared memory, double buffered. A save writes into a
// slot that does not hold the newest sealed version, so a crash mid-save costs only that save.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <future>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "ckpt_shm/host_budget.hpp"
#include "ckpt_shm/shm_segment.hpp"
#include "ckpt_shm/version_layout.hpp"

namespace shoal::ckpt {

struct RankStoreConfig {
  std::string job;  // the identity every version carries; also names the segments unless `store` is set
  uint32_t rank = 0;
  uint32_t slots = 2;  // versions kept; at least 2
  uint32_t world = 0;  // the job's world size, stored in every version saved; 0: unknown, else > rank
  // Names the segments (see slot_segment_name); empty: the job. Hosts that share a machine (tests,
  // demos) each need their own, or they would read each other's slots as their own.
  std::string store{};

  const std::string& segment_prefix() const { return store.empty() ? job : store; }
};

struct WritableBuffer {
  std::string name;
  std::span<std::byte> bytes;  // inside the slot's segment: fill with memcpy or cudaMemcpy
};

struct ReadableBuffer {
  std::string name;
  std::span<const std::byte> bytes;
};

// A complete version, validated (structure, meta and data checksums) when it was returned. The spans
// stay valid while the store lives and the slot is neither dropped nor reused; with two slots that is
// until the second save begun after this one.
struct SealedVersion {
  uint64_t step = 0;
  uint64_t sequence = 0;
  uint32_t world = 0;  // as saved: 0 when unknown
  uint32_t slot = 0;
  uint64_t total_bytes = 0;
  std::vector<ReadableBuffer> buffers;

  const ReadableBuffer* find(std::string_view name) const;
};

// What one slot holds right now, for listings and the host budget.
struct SlotReport {
  uint32_t slot = 0;
  std::string segment_name;
  uint64_t segment_bytes = 0;  // 0: no segment exists for this slot
  Result<VersionInfo, LayoutError> version = fail(LayoutError{LayoutCause::empty, "no segment"});
};

// Not thread-safe; one writer per (job, rank) at a time (the rank's trainer). Any number of processes
// may read, each with its own RankStore: segments are found by name, and a reader never writes.
// Segments outlive every RankStore: remove them with remove_segments (the agent's job).
class RankStore {
 public:
  // Validates the config and opens whichever slot segments already exist; creates none.
  static Result<RankStore> open(RankStoreConfig config);
  // Unlinks every slot segment of (job, rank); Ok when there are none.
  static Status remove_segments(std::string_view job, uint32_t rank, uint32_t slots = 2);

  // Starts a save of `step`: picks the slot (never the one with the newest sealed version), sizes
  // its segment, writes the header unsealed and returns one span per buffer, in the given order.
  // Fails while another save is in progress (commit or abandon it first). Which version is newest is
  // decided with data checksums verified, except for a version this store committed or verified
  // itself: re-checksumming the previous checkpoint at every save would double the cost of a save.
  // So a stray write into this process's own last commit goes unnoticed until a restart or a read.
  Result<std::vector<WritableBuffer>> begin_save(uint64_t step, std::span<const BufferSpec> buffers);
  // Copies src into buffer `index` of the save in progress (the order given to begin_save) and
  // checksums it on the way, in one pass (copy_with_checksum): commit then does not read that buffer
  // again. Do not write into that buffer's span afterwards, or the version seals with a checksum of
  // the old bytes. Fails when no save is in progress, the index is out of range or the sizes differ.
  Status write_buffer(size_t index, std::span<const std::byte> src);
  // Starts copying device memory (a CUDA device pointer, exactly the buffer's size) into buffer `index`
  // of the save in progress with cudaMemcpyAsync on `stream` (a cudaStream_t; nullptr: the default
  // stream). The slot's segment is page-locked first, once per mapping, so the copy runs at pinned
  // speed. commit() waits for every stream used here, then checksums those buffers. Fails where the
  // build has no CUDA runtime, the pointer is not device memory, or the copy cannot start.
  Status copy_from_device(size_t index, const void* device_src, void* stream);
  // Checksums the buffers not written by write_buffer and seals the version; it becomes the newest
  // sealed one.
  Result<SealedVersion> commit();
  // Forgets the save in progress; its slot stays unsealed and is never returned.
  void abandon();
  // Readies memory for a save whose segment needs `segment_bytes` (the version and its chunk lists:
  // chunk_lists.hpp, segment_bytes_for) off the caller's path: a thread of its own gives the
  // slot the next save will use a segment of at least that size, its pages allocated, cleared and
  // mapped (memory touched for the first time costs about ten times a memcpy on these machines:
  // tmpfs clears each page at its first fault). The next begin_save waits for it and adopts the
  // mapping. commit() does this for the following save whenever that slot is too small for the
  // version just sealed, so only a rank's very first save of a size finds its memory cold; call it
  // before that save (when the size is known early) to spare that one too. At most one preparation
  // runs; a new call waits for the previous one first.
  void prepare(uint64_t segment_bytes);
  // Waits until the preparation started by prepare() or commit() has finished (begin_save does this
  // itself), so that a caller can tell when its next save will find its memory ready.
  void wait_prepared();
  bool saving() const { return in_progress_.has_value(); }

  // The newest complete version, fully validated; nullopt when no slot holds one. A slot that claims
  // to be sealed but fails validation is skipped (and logged once per cause).
  std::optional<SealedVersion> newest_sealed();
  // Every slot with what it holds (data checksums are not verified here).
  std::vector<SlotReport> inspect();
  // The whole mapped segment of the slot holding sealed `step`, structure and meta checksum checked, the
  // data not (a reader that copies it out verifies it on the way); nullopt when no slot holds it. Spares a
  // restore in the process that saved the version a second mapping of it. Valid as SealedVersion's spans.
  std::optional<std::span<const std::byte>> sealed_segment(uint64_t step);
  // The slots with a segment, as the host budget counts them.
  std::vector<HeldVersion> held_versions();
  // Unlinks one slot's segment to free its memory. Refuses the slot with the newest sealed version
  // and the slot of a save in progress.
  Status drop_slot(uint32_t slot);

  const RankStoreConfig& config() const { return config_; }
  // Versions that claimed to be sealed and were refused by newest_sealed, by cause.
  uint64_t refused_count(LayoutCause cause) const { return refused_[static_cast<size_t>(cause)]; }

 private:
  struct Save {
    uint32_t slot;
    uint64_t step;
    uint64_t sequence;
    std::vector<std::span<std::byte>> buffers;       // inside the slot's segment, in table order
    std::vector<std::optional<uint32_t>> checksums;  // taken by write_buffer; nullopt: commit computes it
    std::vector<void*> streams;                      // CUDA streams with copies into this save
    std::vector<uint32_t*> lists;                    // each buffer's chunk crc list; nullptr: no room
    uint64_t segment_bytes;                          // what the version and its lists need
  };
  struct Verified {
    uint64_t sequence;  // the sealed version this store knows to be intact (it committed or read it)
  };

  struct Preparing {
    uint32_t slot;
    std::future<Result<ShmSegment>> segment;
  };

  explicit RankStore(RankStoreConfig config, std::vector<std::string> names);
  // The slot a save would write into, given the newest sealed slot: an empty or unsealed one first,
  // else the one with the oldest sealed version.
  uint32_t next_target(std::optional<uint32_t> newest) const;
  // Starts preparing `slot` for total_bytes unless its mapping is that large already.
  void prepare_slot(uint32_t slot, uint64_t total_bytes);
  // Waits for the preparation and adopts its mapping when it still names the slot's object.
  void adopt_prepared();
  // Opens a segment another process created since, and remaps one another process grew.
  void refresh_slot(uint32_t slot);
  // The slot with the highest-sequence sealed version that passes validation (data checked unless
  // this store has already verified that very version).
  std::optional<uint32_t> newest_slot(uint64_t* max_sequence);
  Result<SealedVersion> view_of(uint32_t slot, DataCheck check);
  // The buffer `index` of the save in progress, checked against a source of `size` bytes.
  Result<std::span<std::byte>> save_buffer(size_t index, size_t size) const;
  void warn_once(LayoutCause cause, const std::string& detail);

  RankStoreConfig config_;
  std::vector<std::string> names_;
  std::vector<ShmSegment> segments_;  // invalid (default) where no segment exists yet
  std::vector<std::optional<Verified>> verified_;
  std::optional<Save> in_progress_;
  std::optional<Preparing> preparing_;
  uint64_t last_sequence_ = 0;
  std::array<uint64_t, kLayoutCauses> refused_{};
  uint32_t warned_causes_ = 0;  // a bit per LayoutCause already logged
};

}  // namespace shoal::ckpt

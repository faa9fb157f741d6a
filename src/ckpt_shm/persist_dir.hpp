// PersistDir: sealed checkpoint versions persisted to a directory (--ckpt-dir), so that a job survives
// losing every host that held it in memory. The agent persists each local rank's newest sealed version
// on a thread of its own, and on SIGTERM. A file holds exactly a version's bytes [0, total_bytes) in the
// version_layout format, so reading one back is decode_version on its contents.
//
// Files live in <dir>/<job>/ as r<rank>.s<step>.shoalckpt, mode 0600. Each is written under an
// unpredictable temporary name ("<name>.<random>.tmp", created O_EXCL|O_NOFOLLOW), fsynced and renamed, so a
// crash never leaves a partial file under the final name (open() removes the leftover *.tmp files).
// MANIFEST lists the files; it is a convenience that saves reading every file's prefix at open, and the
// files themselves are the truth: a missing or inconsistent manifest is rebuilt from them. The
// directories and every file read are guarded as persist_trust.hpp says (this user's, written by no one
// else; no links, FIFOs or oversized files), so a user who is not this one cannot make the agent write
// through a link, block, or load what it did not persist.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "ckpt_shm/version_layout.hpp"

namespace shoal::ckpt {


struct PersistConfig {
  std::string dir;             // the root directory; created (with parents) when missing
  std::string job;             // a valid job name (check_job_name in shm_segment.hpp); files go under <dir>/<job>/
  uint32_t keep_per_rank = 2;  // newest steps kept per rank; older files are removed after a newer one is
                               // durable. At least 1
  // The largest version file read back; a larger one is refused (persist_trust's `oversized`). 0: the size
  // of the filesystem behind /dev/shm (each version came from there and goes back there), unbounded when
  // that cannot be read.
  uint64_t max_version_bytes = 0;
};

struct PersistedVersion {
  uint32_t rank = 0;
  uint64_t step = 0;
  uint64_t sequence = 0;
  uint32_t world = 0;
  uint64_t bytes = 0;  // the file's size == the version's total_bytes
  std::string path;    // absolute or as given: <dir>/<job>/r<rank>.s<step>.shoalckpt
};

// What persist() did since open, in versions (bytes: of the versions persisted).
struct PersistCounters {
  uint64_t persisted = 0;  // written and durable under their final name
  uint64_t bytes = 0;      // bytes of those versions
  uint64_t refused = 0;    // not a sealed, valid version of the job, superseded, or overwritten while being read
  uint64_t cancelled = 0;  // the cancel flag was raised mid-write
  uint64_t failed = 0;     // an I/O error (the disk full, most often)
  uint64_t removed = 0;    // older files removed to keep keep_per_rank steps of a rank
};

// Thread-safe: persist() calls are serialized among themselves (one runs at a time), and list(),
// newest(), load() and counters() may run on other threads meanwhile without waiting for its I/O.
class PersistDir {
 public:
  // Pieces in which persist() copies and writes a version's data.
  static constexpr size_t kPieceBytes = size_t{8} << 20;

  // Creates <dir>/<job> if needed (mode 0700) and refuses either directory when another user owns it or
  // may write it (persist_trust's guard_directory: the message says the chmod or chown that fixes it;
  // <dir> may be a link, <job> may not); removes leftover "*.tmp" files (a crash mid-write); reads the
  // manifest, and if it is missing or unreadable rebuilds the list by scanning the *.shoalckpt files,
  // validating each one's prefix (header, table and meta checksum; data not read) and dropping
  // (logging, not deleting) files that fail. Files the manifest does not list (a crash between a
  // rename and the manifest's update) are validated the same way and added. Then rewrites the
  // manifest. Fails with a clear sentence when the directory cannot be created or written.
  static Result<PersistDir> open(PersistConfig config);

  ~PersistDir();
  PersistDir(PersistDir&& other) noexcept;
  PersistDir& operator=(PersistDir&& other) noexcept;
  PersistDir(const PersistDir&) = delete;
  PersistDir& operator=(const PersistDir&) = delete;

  // Writes one sealed version, given as its bytes [0, total_bytes) in memory: possibly a shared-memory
  // mapping that another process overwrites while it is read (a trainer's third save can reuse the
  // slot). The prefix is copied first and validated on the copy; the buffers are copied through a
  // bounce buffer in pieces of kPieceBytes and checksummed as copied, so that what reaches the disk is
  // exactly what was verified. A checksum that disagrees with the table means the source changed
  // underneath: refused. Returns the existing entry, writing nothing, when (rank, step) is persisted
  // already with the same sequence; refuses a step older than keep_per_rank persisted steps of its
  // rank (it would be removed at once). Then removes the rank's files beyond keep_per_rank newest steps.
  // `cancel`, when given, is checked between pieces. Any failure removes the temporary file: nothing
  // partial is ever left under the final name.
  Result<PersistedVersion> persist(std::span<const std::byte> version, const std::atomic<bool>* cancel = nullptr);

  // Every persisted version, by rank then step ascending.
  std::vector<PersistedVersion> list() const;
  // The newest persisted step of `rank`, if any.
  std::optional<PersistedVersion> newest(uint32_t rank) const;
  // Reads (rank, step) back and validates it fully (decode_version, data checksums verified): the
  // version's bytes. Fails when it is not persisted, on an I/O error, or when the file is corrupted on
  // disk (the message names the LayoutCause), or refused by persist_trust: such a version is dropped from
  // the list (its file stays, for a person to look at).
  Result<std::vector<std::byte>> load(uint32_t rank, uint64_t step) const;
  // The same, into memory the caller provides (a shared-memory segment, without a copy in between):
  // `place(bytes)` returns at least that many bytes to read the file into. Returns the version's layout.
  using Placement = std::function<Result<std::span<std::byte>>(uint64_t bytes)>;
  Result<VersionInfo> load_into(uint32_t rank, uint64_t step, const Placement& place) const;

  PersistCounters counters() const;
  const PersistConfig& config() const { return config_; }
  // <dir>/<job>: where the files and the manifest are.
  const std::string& job_dir() const { return job_dir_; }

 private:
  struct State;  // the list, the counters and their locks (in the .cpp)

  PersistDir(PersistConfig config, std::string job_dir);
  std::string path_of(uint32_t rank, uint64_t step) const;
  // Counts a failed persist() of `kind` and passes its message on.
  Unexpected<Failure> count_failure(uint64_t PersistCounters::*kind, std::string message);
  // Whether persist() writes the version of `id`: its entry when persisted already with that sequence
  // (nothing to write), nullopt when it is to be written, or a refusal (counted).
  Result<std::optional<PersistedVersion>> check_new(const VersionIdentity& id);
  // Lists a version just made durable, rewrites the manifest, then removes the rank's files beyond
  // keep_per_rank newest steps.
  void record(const PersistedVersion& entry);

  PersistConfig config_;
  std::string job_dir_;
  std::unique_ptr<State> state_;
};

}  // namespace shoal::ckpt

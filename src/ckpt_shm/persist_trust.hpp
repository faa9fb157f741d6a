// persist_trust: the persist directory (--ckpt-dir) guarded like /dev/shm. The agent may run as root, and
// whoever can write a directory it writes into can plant a symlink where it creates a file (it would
// overwrite the link's target), a FIFO where it reads one (start would block), a huge or forged file.
// So: every directory shoal uses there must be its own user's and writable by nobody else (refused with
// the chmod/chown that fixes it); files are created O_EXCL|O_NOFOLLOW under unpredictable names, mode
// 0600 whatever the umask; every read opens O_NOFOLLOW|O_NONBLOCK and checks on the descriptor a regular
// file of this user, writable by nobody else, within its size bound. Every refusal is counted by cause
// (process-wide, like segment_trust's) and logged at most once a minute per cause.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.hpp"

namespace shoal::ckpt {

enum class PersistRefusal : uint8_t {
  unsafe_directory,  // a directory shoal writes into is another user's, writable by others, or not a directory
  symlink,           // a symbolic link where a file was expected (never followed)
  not_regular,       // a FIFO, socket, device or directory named like a file (never blocked on)
  foreign_owner,     // a file owned by another user than this process's
  loose_mode,        // a file writable by group or others, readable by others, or with unexpected bits
  oversized,         // a MANIFEST or a version file beyond its bound
  invalid,           // not what its name says: truncated, forged, a manifest that does not parse, corrupt data
};
inline constexpr size_t kPersistRefusals = 7;
std::string_view name(PersistRefusal cause);

// A MANIFEST is a line of about 60 bytes per version kept; 1 MiB is thousands of ranks' worth.
inline constexpr uint64_t kMaxManifestBytes = uint64_t{1} << 20;

struct PersistError {
  std::optional<PersistRefusal> refusal;  // set: refused (counted); else an ordinary I/O error
  std::string message;
};

// The verdict on a directory's stat: nullopt when this process's user may keep files in it.
std::optional<PersistRefusal> judge_persist_dir(const struct stat& st, uid_t user);
// The verdict on a file's stat (size bound included): nullopt when it may be read. Pure, for tables.
std::optional<PersistRefusal> judge_persist_file(const struct stat& st, uid_t user, uint64_t max_bytes);

// Makes `path` (mode 0700, with missing parents) unless it exists, then checks the directory itself: owned
// by this process's user and writable by no one else. `follow_link`: whether `path` may be a symbolic link
// (the operator named it), or must be the directory itself (one shoal made below it). A refusal is
// counted and its message says the command that fixes it.
Status guard_directory(const std::string& path, bool follow_link);

// Opens `path` read-only with O_NOFOLLOW, O_NONBLOCK and O_CLOEXEC and checks it on the descriptor
// (judge_persist_file); `st` receives its stat. Returns the descriptor. A refusal is counted here; ENOENT
// comes back as an ordinary error with `missing` set.
struct OpenedFile {
  int fd = -1;
  struct stat st {};
};
Result<OpenedFile, PersistError> open_persisted(const std::string& path, uint64_t max_bytes, bool* missing = nullptr);

// A new file for writing next to `final_path`, named "<final_path>.<16 random hex digits>.tmp" and
// created O_EXCL|O_NOFOLLOW|O_CLOEXEC, mode 0600 whatever the umask.
struct TempFile {
  int fd = -1;
  std::string path;
};
Result<TempFile> create_temp_file(const std::string& final_path);

// Counts a refusal of `path` and logs it (rate-limited per cause); returns the error to pass on.
PersistError refuse_persisted(PersistRefusal cause, const std::string& path, const std::string& detail);

// Refusals since the process started, by cause.
uint64_t refused_persisted(PersistRefusal cause);
std::array<uint64_t, kPersistRefusals> refused_persisted_counts();

}  // namespace shoal::ckpt

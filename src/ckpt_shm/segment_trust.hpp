// Whether a checkpoint segment found by name may be used: /dev/shm is writable by every local user, so a
// name proves nothing. Another user could create a slot's segment before a trainer does (0666, to read the
// weights or to plant a version: CRC32C has no key), name a FIFO like a slot (an open would block the
// agent's loop) or a symlink (an open would follow it). So every segment is opened with O_NOFOLLOW and
// O_NONBLOCK and then fstat'ed: it must be a regular file, owned by the user expected to have written
// it, with mode 0600, or 0640 when its group is that user's. Anything else is refused, counted by cause
// (process-wide: `shoal ckpt ls` and the metrics show the agent's) and logged once per cause.
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

// The user expected to own a segment: who wrote it. The agent's own uid for its replicas; for a trainer's
// slots, the trainer's (the same process, or under `shoal agent` the agent's user unless the caller knows
// the trainer's: a caller that learns it, e.g. from the control socket's peer credentials, passes it).
struct SegmentOwner {
  uid_t uid = 0;
  gid_t gid = 0;  // a segment may be readable by this group (mode 0640), by no other
  bool operator==(const SegmentOwner&) const = default;
};
// This process's effective user and group.
SegmentOwner this_process_owner();

// Owners by kind of segment: the slots a host's trainers write, the replicas its agent writes.
struct SegmentOwners {
  SegmentOwner slots = this_process_owner();
  SegmentOwner replicas = this_process_owner();
};

enum class SegmentRefusal : uint8_t {
  symlink,        // a symbolic link named like a segment (never followed)
  not_regular,    // a FIFO, socket, device or directory named like a segment (never blocked on)
  foreign_owner,  // owned by another user than the one expected to have written it
  loose_mode,     // readable or writable by others, writable by the group, or readable by a foreign group
};
inline constexpr size_t kSegmentRefusals = 4;
std::string_view name(SegmentRefusal cause);

struct SegmentError {
  std::optional<SegmentRefusal> refusal;  // set: the object exists but is not trusted; else an ordinary error
  std::string message;
};

// The verdict on an object's fstat: nullopt when it may be used. Pure, for tables of tests.
std::optional<SegmentRefusal> judge_segment(const struct stat& st, const SegmentOwner& owner);

// Opens `path` (a file under /dev/shm, or another directory in tests) with O_NOFOLLOW, O_NONBLOCK and
// O_CLOEXEC plus `flags` (O_RDONLY or O_RDWR), and fstat's it into `st`. Returns the descriptor, or the
// error; a refusal is counted and logged (once per cause) here.
Result<int, SegmentError> open_trusted_file(const std::string& path, int flags, const SegmentOwner& owner,
                                           struct stat* st);

// Refusals since the process started, by cause (every caller in the process counts here).
uint64_t refused_segments(SegmentRefusal cause);
std::array<uint64_t, kSegmentRefusals> refused_segment_counts();

}  // namespace shoal::ckpt

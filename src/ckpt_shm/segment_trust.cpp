// Opening checkpoint segments without following links or blocking, and judging who wrote them.
#include "ckpt_shm/segment_trust.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/log.hpp"

namespace shoal::ckpt {
namespace {

static_assert(static_cast<size_t>(SegmentRefusal::loose_mode) + 1 == kSegmentRefusals);

std::array<std::atomic<uint64_t>, kSegmentRefusals> g_segment_refused{};
std::atomic<uint32_t> g_warned{0};  // a bit per cause already logged

Unexpected<SegmentError> refuse(SegmentRefusal cause, const std::string& path, const std::string& detail) {
  g_segment_refused[static_cast<size_t>(cause)].fetch_add(1, std::memory_order_relaxed);
  const uint32_t bit = 1u << static_cast<uint32_t>(cause);
  std::string message = "refusing " + path + ": " + detail;
  if ((g_warned.fetch_or(bit) & bit) == 0) {
    log::get(log::Component::ckpt)
        .warn("{} (a checkpoint segment is used only when its owner wrote it); further refusals with cause {} are "
              "not logged, only counted (`shoal ckpt ls`)",
              message, name(cause));
  }
  return Unexpected<SegmentError>{SegmentError{cause, std::move(message)}};
}

std::string octal_mode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

}  // namespace

SegmentOwner this_process_owner() { return SegmentOwner{::geteuid(), ::getegid()}; }

std::string_view name(SegmentRefusal cause) {
  switch (cause) {
    case SegmentRefusal::symlink:
      return "symlink";
    case SegmentRefusal::not_regular:
      return "not_regular";
    case SegmentRefusal::foreign_owner:
      return "foreign_owner";
    case SegmentRefusal::loose_mode:
      return "loose_mode";
  }
  return "unknown";
}

std::optional<SegmentRefusal> judge_segment(const struct stat& st, const SegmentOwner& owner) {
  if (S_ISLNK(st.st_mode)) return SegmentRefusal::symlink;
  if (!S_ISREG(st.st_mode)) return SegmentRefusal::not_regular;
  if (st.st_uid != owner.uid) return SegmentRefusal::foreign_owner;
  // 0600 as created (shm_open with 0600); 0640 lets the owner's own group read (a monitoring user). No
  // execute, set-id or sticky bits: nothing creates them, so something else made this file.
  const mode_t mode = st.st_mode & 07777;
  if (mode == 0600) return std::nullopt;
  if (mode == 0640 && st.st_gid == owner.gid) return std::nullopt;
  return SegmentRefusal::loose_mode;
}

Result<int, SegmentError> open_trusted_file(const std::string& path, int flags, const SegmentOwner& owner,
                                           struct stat* st) {
  const int fd = ::open(path.c_str(), flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    // O_NOFOLLOW on a symlink fails with ELOOP; a directory opened for writing with EISDIR.
    if (err == ELOOP) return refuse(SegmentRefusal::symlink, path, "a symbolic link");
    if (err == EISDIR) return refuse(SegmentRefusal::not_regular, path, "a directory");
    return Unexpected<SegmentError>{SegmentError{std::nullopt, path + ": " + std::strerror(err)}};
  }
  struct stat local {};
  struct stat& s = st != nullptr ? *st : local;
  if (::fstat(fd, &s) != 0) {
    const int err = errno;
    ::close(fd);
    return Unexpected<SegmentError>{SegmentError{std::nullopt, "fstat(" + path + "): " + std::strerror(err)}};
  }
  if (const auto cause = judge_segment(s, owner)) {
    ::close(fd);
    switch (*cause) {
      case SegmentRefusal::not_regular:
        return refuse(*cause, path, "not a regular file (a FIFO, socket or device)");
      case SegmentRefusal::foreign_owner:
        return refuse(*cause, path,
                      "owned by uid " + std::to_string(s.st_uid) + ", not uid " + std::to_string(owner.uid) +
                          " (another user created it: remove it, or choose another --job)");
      case SegmentRefusal::loose_mode:
        return refuse(*cause, path,
                      "mode " + octal_mode(s.st_mode) + " (group " + std::to_string(s.st_gid) +
                          "); a segment must be 0600, or 0640 with the owner's group " + std::to_string(owner.gid));
      case SegmentRefusal::symlink:
        return refuse(*cause, path, "a symbolic link");
    }
  }
  return fd;
}

uint64_t refused_segments(SegmentRefusal cause) {
  return g_segment_refused[static_cast<size_t>(cause)].load(std::memory_order_relaxed);
}

std::array<uint64_t, kSegmentRefusals> refused_segment_counts() {
  std::array<uint64_t, kSegmentRefusals> out{};
  for (size_t i = 0; i < kSegmentRefusals; ++i) out[i] = g_segment_refused[i].load(std::memory_order_relaxed);
  return out;
}

}  // namespace shoal::ckpt

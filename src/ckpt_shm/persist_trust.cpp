// The persist directory's guards: who may own and write its directories and files, opening without
// following links or blocking, temporary files no one can predict, and the refusals' counters.
#include "ckpt_shm/persist_trust.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "base/log.hpp"
#include "base/warn_limiter.hpp"

namespace shoal::ckpt {
namespace {

static_assert(static_cast<size_t>(PersistRefusal::invalid) + 1 == kPersistRefusals);

std::array<std::atomic<uint64_t>, kPersistRefusals> g_persist_refused{};

std::string octal(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

std::string errno_text(const std::string& action, const std::string& path, int err) {
  return "cannot " + action + " " + path + ": " + std::strerror(err);
}

// What a refusal of a directory says, with the command that fixes it.
std::string directory_detail(const struct stat& st, uid_t user, const std::string& path) {
  if (S_ISLNK(st.st_mode)) return "a symbolic link where shoal keeps a directory of its own; remove it";
  if (!S_ISDIR(st.st_mode)) return "not a directory";
  if (st.st_uid != user) {
    return "owned by uid " + std::to_string(st.st_uid) + ", not by this process's uid " + std::to_string(user) +
           ", so that user could plant links or files there; run `chown " + std::to_string(user) + " " + path +
           "` or choose a directory of your own";
  }
  return "writable by group or others (mode " + octal(st.st_mode) +
         "), who could plant links or files there; run `chmod go-w " + path + "`";
}

// mkdir of one directory, mode 0700 whatever the umask (set on the directory opened without following
// a link, so a link swapped in meanwhile is not chmod'ed): 0, EEXIST, or another errno.
int make_directory(const std::string& path) {
  if (::mkdir(path.c_str(), 0700) != 0) return errno;
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return errno;
  const int err = ::fchmod(fd, 0700) == 0 ? 0 : errno;
  ::close(fd);
  return err;
}

// make_directory for `path` and each missing directory above it: 0 or an errno.
int make_directories(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  int err = make_directory(path);
  if (err != ENOENT) return err == EEXIST ? 0 : err;
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ENOENT;
  if (slash > 0) {
    if (err = make_directories(path.substr(0, slash)); err != 0) return err;
  }
  err = make_directory(path);
  return err == EEXIST ? 0 : err;
}

}  // namespace

std::string_view name(PersistRefusal cause) {
  switch (cause) {
    case PersistRefusal::unsafe_directory:
      return "unsafe_directory";
    case PersistRefusal::symlink:
      return "symlink";
    case PersistRefusal::not_regular:
      return "not_regular";
    case PersistRefusal::foreign_owner:
      return "foreign_owner";
    case PersistRefusal::loose_mode:
      return "loose_mode";
    case PersistRefusal::oversized:
      return "oversized";
    case PersistRefusal::invalid:
      return "invalid";
  }
  return "unknown";
}

std::optional<PersistRefusal> judge_persist_dir(const struct stat& st, uid_t user) {
  if (!S_ISDIR(st.st_mode) || st.st_uid != user || (st.st_mode & 022) != 0) return PersistRefusal::unsafe_directory;
  return std::nullopt;
}

std::optional<PersistRefusal> judge_persist_file(const struct stat& st, uid_t user, uint64_t max_bytes) {
  if (S_ISLNK(st.st_mode)) return PersistRefusal::symlink;
  if (!S_ISREG(st.st_mode)) return PersistRefusal::not_regular;
  if (st.st_uid != user) return PersistRefusal::foreign_owner;
  // 0600 as written now; 0640 as written by agents before files were made 0600 (their group may read).
  if ((st.st_mode & 07777 & ~mode_t{0640}) != 0) return PersistRefusal::loose_mode;
  if (static_cast<uint64_t>(st.st_size) > max_bytes) return PersistRefusal::oversized;
  return std::nullopt;
}

PersistError refuse_persisted(PersistRefusal cause, const std::string& path, const std::string& detail) {
  static std::mutex mutex;
  static log::WarnLimiter limiter(std::chrono::minutes(1));
  g_persist_refused[static_cast<size_t>(cause)].fetch_add(1, std::memory_order_relaxed);
  std::string message = "refusing " + path + ": " + detail;
  std::optional<uint64_t> held;
  {
    std::lock_guard lock(mutex);
    held = limiter.admit(name(cause), log::WarnLimiter::Clock::now());
  }
  if (held) {
    log::get(log::Component::ckpt)
        .warn("{} (the persist directory is used only as its owner left it; cause {}{})", message, name(cause),
              *held > 0 ? ", " + std::to_string(*held) + " more since the last line" : std::string());
  }
  return PersistError{cause, std::move(message)};
}

Status guard_directory(const std::string& path, bool follow_link) {
  if (int err = make_directories(path); err != 0) return fail(errno_text("create the directory", path, err));
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | (follow_link ? 0 : O_NOFOLLOW));
  struct stat st {};
  if (fd < 0) {
    const int err = errno;
    if ((err == ENOTDIR || err == ELOOP) && ::lstat(path.c_str(), &st) == 0) {
      return fail(refuse_persisted(PersistRefusal::unsafe_directory, path, directory_detail(st, ::geteuid(), path))
                      .message);
    }
    return fail(errno_text("open the directory", path, err));
  }
  const int rc = ::fstat(fd, &st);
  const int err = errno;
  ::close(fd);
  if (rc != 0) return fail(errno_text("stat", path, err));
  if (judge_persist_dir(st, ::geteuid())) {
    return fail(
        refuse_persisted(PersistRefusal::unsafe_directory, path, directory_detail(st, ::geteuid(), path)).message);
  }
  return Ok{};
}

Result<OpenedFile, PersistError> open_persisted(const std::string& path, uint64_t max_bytes, bool* missing) {
  if (missing != nullptr) *missing = false;
  OpenedFile out;
  out.fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (out.fd < 0) {
    const int err = errno;
    if (err == ELOOP) return fail(refuse_persisted(PersistRefusal::symlink, path, "a symbolic link"));
    if (err == ENOENT && missing != nullptr) *missing = true;
    return fail(PersistError{std::nullopt, errno_text("open", path, err)});
  }
  if (::fstat(out.fd, &out.st) != 0) {
    const int err = errno;
    ::close(out.fd);
    return fail(PersistError{std::nullopt, errno_text("stat", path, err)});
  }
  const uid_t user = ::geteuid();
  const auto cause = judge_persist_file(out.st, user, max_bytes);
  if (!cause) return out;
  ::close(out.fd);
  switch (*cause) {
    case PersistRefusal::not_regular:
      return fail(refuse_persisted(*cause, path, "not a regular file (a FIFO, socket, device or directory)"));
    case PersistRefusal::foreign_owner:
      return fail(refuse_persisted(*cause, path,
                                   "owned by uid " + std::to_string(out.st.st_uid) + ", not by this process's uid " +
                                       std::to_string(user) + " (shoal did not write it: remove it)"));
    case PersistRefusal::loose_mode:
      return fail(refuse_persisted(*cause, path,
                                   "mode " + octal(out.st.st_mode) + "; shoal writes its files 0600 (run `chmod 600 " +
                                       path + "` if you restored it yourself)"));
    case PersistRefusal::oversized:
      return fail(refuse_persisted(*cause, path,
                                   std::to_string(out.st.st_size) + " bytes, more than the " +
                                       std::to_string(max_bytes) + " such a file can hold"));
    default:
      return fail(refuse_persisted(*cause, path, std::string(name(*cause))));
  }
}

Result<TempFile> create_temp_file(const std::string& final_path) {
  uint64_t random = 0;
  if (::getrandom(&random, sizeof random, 0) != static_cast<ssize_t>(sizeof random)) {
    return fail(errno_text("draw a random name for a temporary file beside", final_path, errno));
  }
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, ".%016llx.tmp", static_cast<unsigned long long>(random));
  TempFile out{-1, final_path + suffix};
  out.fd = ::open(out.path.c_str(), O_CREAT | O_EXCL | O_NOFOLLOW | O_WRONLY | O_CLOEXEC, 0600);
  if (out.fd < 0) return fail(errno_text("create", out.path, errno));
  // The umask may have taken bits away from 0600 (never added any); the file is 0600 either way.
  if (::fchmod(out.fd, 0600) != 0) {
    const int err = errno;
    ::close(out.fd);
    ::unlink(out.path.c_str());
    return fail(errno_text("set the mode of", out.path, err));
  }
  return out;
}

uint64_t refused_persisted(PersistRefusal cause) {
  return g_persist_refused[static_cast<size_t>(cause)].load(std::memory_order_relaxed);
}

std::array<uint64_t, kPersistRefusals> refused_persisted_counts() {
  std::array<uint64_t, kPersistRefusals> out{};
  for (size_t i = 0; i < kPersistRefusals; ++i) out[i] = g_persist_refused[i].load(std::memory_order_relaxed);
  return out;
}

}  // namespace shoal::ckpt

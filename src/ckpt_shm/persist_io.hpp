// persist_io: the low-level file I/O of PersistDir (an owning fd, whole writes and reads, directory
// fsync) and the wording its messages share. Internal to ckpt_shm.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "base/result.hpp"
#include "ckpt_shm/version_layout.hpp"

namespace shoal::ckpt {

// "step <step> of rank <rank>", for a message.
std::string version_text(uint32_t rank, uint64_t step);

// "cause: detail", for a message.
std::string layout_text(const LayoutError& e);

// "cannot <action> <path>: <reason>", the reason said plainly where a person can act on it. A negative
// `err`: the file ended before the bytes expected (see read_all).
std::string io_error(std::string_view action, const std::string& path, int err);

// A file descriptor, closed when it goes out of scope.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

  bool valid() const { return fd_ >= 0; }
  int get() const { return fd_; }
  // Closes now: 0, or the errno of a close that failed (EINTR closes too on Linux).
  int close() {
    const int r = ::close(std::exchange(fd_, -1));
    return r == 0 || errno == EINTR ? 0 : errno;
  }

 private:
  int fd_;
};

// Writes all of `bytes`, through short writes and EINTR: 0 or an errno.
int write_all(int fd, std::span<const std::byte> bytes);

// Fills `out` from `offset`: 0, an errno, or -1 when the file ends first.
int read_all(int fd, std::span<std::byte> out, uint64_t offset);

// Makes the directory's entries (a rename, a new file) durable: 0 or an errno.
int fsync_dir(const std::string& dir);

}  // namespace shoal::ckpt

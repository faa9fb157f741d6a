// persist_io: PersistDir's whole-buffer writes and reads through short counts and EINTR, directory
// fsync, and the wording of its I/O errors.
#include "ckpt_shm/persist_io.hpp"

#include <fcntl.h>

#include <system_error>

namespace shoal::ckpt {

std::string version_text(uint32_t rank, uint64_t step) {
  return "step " + std::to_string(step) + " of rank " + std::to_string(rank);
}

std::string layout_text(const LayoutError& e) { return std::string(name(e.cause)) + ": " + e.detail; }

std::string io_error(std::string_view action, const std::string& path, int err) {
  const std::string reason = std::error_code(err, std::generic_category()).message();
  std::string text = "cannot " + std::string(action) + " " + path + ": ";
  if (err < 0) return text + "the file ends early";
  if (err == ENOSPC) return text + "the disk is full (" + reason + ")";
  if (err == EDQUOT) return text + "the disk quota is used up (" + reason + ")";
  return text + reason;
}

int write_all(int fd, std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;
    bytes = bytes.subspan(static_cast<size_t>(n));
  }
  return 0;
}

int read_all(int fd, std::span<std::byte> out, uint64_t offset) {
  while (!out.empty()) {
    const ssize_t n = ::pread(fd, out.data(), out.size(), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return -1;
    out = out.subspan(static_cast<size_t>(n));
    offset += static_cast<uint64_t>(n);
  }
  return 0;
}

int fsync_dir(const std::string& dir) {
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return errno;
  if (::fsync(fd.get()) != 0) return errno;
  return fd.close();
}

}  // namespace shoal::ckpt

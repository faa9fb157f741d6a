// Listing a host's checkpoint segments from /dev/shm, reading each one's prefix with pread.
#include "ckpt_shm/held_scan.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "ckpt_shm/replica_names.hpp"
#include "base/str_cat.hpp"

namespace shoal::ckpt {
namespace {

Unexpected<LayoutError> refuse_held(LayoutCause cause, std::string detail) {
  return Unexpected<LayoutError>{LayoutError{cause, std::move(detail)}};
}

// "shoal.<store>.r<rank>.v<slot>" exactly (decimal, no leading zeros).
bool is_slot_name(std::string_view name, std::string_view store) {
  const std::string prefix = "shoal." + std::string(store) + ".r";
  if (!name.starts_with(prefix)) return false;
  name.remove_prefix(prefix.size());
  const auto digits = [](std::string_view s) {
    return !s.empty() && s.size() <= 10 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
           (s.size() == 1 || s[0] != '0');
  };
  const size_t dot = name.find(".v");
  return dot != std::string_view::npos && digits(name.substr(0, dot)) && digits(name.substr(dot + 2));
}

bool read_fully(int fd, std::byte* out, size_t bytes, uint64_t offset) {
  size_t done = 0;
  while (done < bytes) {
    const ssize_t n = ::pread(fd, out + done, bytes - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

namespace {

struct Descriptor {
  int fd;
  ~Descriptor() { ::close(fd); }
};

// The prefix of the version in `fd` (an object of `size` bytes), decoded.
Result<VersionInfo, LayoutError> read_prefix(int fd, uint64_t size) {
  if (size < kHeaderBytes) return refuse_held(LayoutCause::truncated, "shorter than a version header");
  std::vector<std::byte> head(kHeaderBytes);
  if (!read_fully(fd, head.data(), head.size(), 0)) return refuse_held(LayoutCause::truncated, "unreadable header");
  auto prefix = prefix_bytes(head);
  if (!prefix) return Unexpected<LayoutError>{prefix.error()};
  if (*prefix > size) return refuse_held(LayoutCause::truncated, "shorter than its own buffer table");
  head.resize(*prefix);
  if (!read_fully(fd, head.data() + kHeaderBytes, *prefix - kHeaderBytes, kHeaderBytes)) {
    return refuse_held(LayoutCause::truncated, "unreadable buffer table");
  }
  auto info = decode_prefix(head);
  if (!info) return info;
  if (info->total_bytes > size) return refuse_held(LayoutCause::truncated, "shorter than its buffers");
  return info;
}

std::string path_of(const std::string& dir, const std::string& segment) {
  return dir + (segment.starts_with('/') ? "" : "/") + segment;
}

}  // namespace

Result<VersionInfo, LayoutError> read_segment_prefix(const std::string& segment, const std::string& dir,
                                                     const SegmentOwner& owner) {
  struct stat st {};
  auto fd = open_trusted_file(path_of(dir, segment), O_RDONLY, owner, &st);
  if (!fd) return refuse_held(LayoutCause::truncated, fd.error().message);
  const Descriptor closer{*fd};
  return read_prefix(*fd, static_cast<uint64_t>(st.st_size));
}

std::vector<HeldSegment> scan_held(std::string_view store, const std::string& dir, const SegmentOwners& owners) {
  std::vector<HeldSegment> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  const std::string replica_prefix = replica_file_prefix(store);
  while (const dirent* e = ::readdir(d)) {
    const std::string_view entry = e->d_name;
    HeldSegment held;
    if (entry.starts_with(replica_prefix) && parse_replica_segment_name(entry)) {
      held.replica = true;
    } else if (!is_slot_name(entry, store)) {
      continue;
    }
    held.segment = str_cat("/", entry);
    // One open, never following a link nor blocking on a FIFO; size and owner from its fstat.
    struct stat st {};
    auto fd = open_trusted_file(path_of(dir, held.segment), O_RDONLY, held.replica ? owners.replicas : owners.slots,
                                &st);
    if (!fd) {
      held.refused = fd.error().refusal;
      held.problem = fd.error().message;
      out.push_back(std::move(held));
      continue;
    }
    const Descriptor closer{*fd};
    held.segment_bytes = static_cast<uint64_t>(st.st_size);
    auto info = read_prefix(*fd, held.segment_bytes);
    if (info) {
      held.version = std::move(*info);
    } else {
      held.problem = std::string(name(info.error().cause)) + ": " + info.error().detail;
    }
    out.push_back(std::move(held));
  }
  ::closedir(d);
  std::sort(out.begin(), out.end(), [](const HeldSegment& a, const HeldSegment& b) { return a.segment < b.segment; });
  return out;
}

}  // namespace shoal::ckpt

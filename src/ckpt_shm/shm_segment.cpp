// POSIX shared memory: shm_open, posix_fallocate, mmap, and the errors of each turned into sentences.
#include "ckpt_shm/shm_segment.hpp"

#include <cstdio>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "ckpt_shm/device_copy.hpp"

namespace shoal::ckpt {
namespace {

// Where glibc's shm_open keeps its objects: a name "/x" is the file /dev/shm/x.
const std::string kShmDir = "/dev/shm";

std::string errno_text(const char* call, const std::string& name, int err) {
  return std::string(call) + "(" + name + "): " + std::strerror(err);
}

// Reserves the pages now: tmpfs otherwise allocates on first write, and a full /dev/shm would then
// kill the trainer with SIGBUS in the middle of its memcpy instead of failing here with a message.
Status reserve(int fd, const std::string& name, size_t bytes) {
  const int err = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (err == 0) return Ok{};
  std::string text = errno_text("posix_fallocate", name, err) + " (" + std::to_string(bytes) + " bytes)";
  if (err == ENOSPC) text += ": /dev/shm is full or smaller than the checkpoint";
  return fail(text);
}

Result<size_t> object_size(int fd, const std::string& name) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return fail(errno_text("fstat", name, errno));
  return static_cast<size_t>(st.st_size);
}

}  // namespace

Status check_job_name(std::string_view job) {
  if (job.empty() || job.size() > kMaxJobNameBytes) {
    return fail("checkpoint job name '" + std::string(job) + "' must have 1 to " + std::to_string(kMaxJobNameBytes) +
                " characters");
  }
  for (char c : job) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    if (!ok) return fail("checkpoint job name '" + std::string(job) + "' may only contain A-Z a-z 0-9 - _");
  }
  return Ok{};
}

std::string store_for_host(std::string_view job, std::string_view host) {
  std::string out = std::string(job) + "-" + std::string(host);
  for (char& c : out) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    if (!ok) c = '_';
  }
  if (out.size() > kMaxJobNameBytes) out.resize(kMaxJobNameBytes);
  return out;
}

std::string store_for_lineage(std::string_view store, uint64_t lineage) {
  if (lineage == 0) return std::string(store);
  char suffix[24];
  std::snprintf(suffix, sizeof suffix, "-%012llx", static_cast<unsigned long long>(lineage & 0xffffffffffffULL));
  const size_t room = kMaxJobNameBytes - std::strlen(suffix);
  return std::string(store.substr(0, std::min(store.size(), room))) + suffix;
}

Result<std::string> slot_segment_name(std::string_view job, uint32_t rank, uint32_t slot) {
  if (auto ok = check_job_name(job); !ok) return fail(ok.error().message);
  return "/shoal." + std::string(job) + ".r" + std::to_string(rank) + ".v" + std::to_string(slot);
}

ShmSegment::ShmSegment(std::string name, int fd) : name_(std::move(name)), fd_(fd) {}

ShmSegment::~ShmSegment() { close(); }

ShmSegment::ShmSegment(ShmSegment&& other) noexcept
    : name_(std::move(other.name_)),
      fd_(std::exchange(other.fd_, -1)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      pinned_(std::exchange(other.pinned_, false)) {}

ShmSegment& ShmSegment::operator=(ShmSegment&& other) noexcept {
  if (this != &other) {
    close();
    name_ = std::move(other.name_);
    fd_ = std::exchange(other.fd_, -1);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    pinned_ = std::exchange(other.pinned_, false);
  }
  return *this;
}

void ShmSegment::unpin() {
  if (pinned_) device::unpin(data_);
  pinned_ = false;
}

void ShmSegment::close() {
  unpin();
  if (data_ != nullptr) ::munmap(data_, size_);
  if (fd_ >= 0) ::close(fd_);
  data_ = nullptr;
  size_ = 0;
  fd_ = -1;
}

Status ShmSegment::map(size_t bytes, bool populate) {
  if (bytes == 0) return fail("shared memory segment " + name_ + " is empty");
  // MAP_POPULATE: the pages are already reserved (posix_fallocate), and mapping them all at once is
  // cheaper than one page fault per 4 KiB later, in the middle of a save or a transfer.
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | (populate ? MAP_POPULATE : 0), fd_, 0);
  if (p == MAP_FAILED) return fail(errno_text("mmap", name_, errno));
  unpin();
  if (data_ != nullptr) ::munmap(data_, size_);
  data_ = static_cast<std::byte*>(p);
  size_ = bytes;
  return Ok{};
}

Result<ShmSegment> ShmSegment::create(const std::string& name, size_t bytes) {
  const int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return fail(errno_text("shm_open", name, errno));
  ShmSegment seg(name, fd);
  // Exactly 0600 whatever the umask: a stricter one (0400) would make the segment fail its own owner's
  // checks when it is opened again (segment_trust.hpp).
  if (::fchmod(fd, 0600) != 0) {
    const int err = errno;
    ::shm_unlink(name.c_str());
    return fail(errno_text("fchmod", name, err));
  }
  if (auto r = reserve(fd, name, bytes); !r) {
    ::shm_unlink(name.c_str());
    return fail(r.error().message);
  }
  if (auto m = seg.map(bytes); !m) {
    ::shm_unlink(name.c_str());
    return fail(m.error().message);
  }
  return seg;
}

Result<ShmSegment, SegmentError> ShmSegment::open_trusted(const std::string& name, const SegmentOwner& owner) {
  return open_trusted(name, owner, true);
}

Result<ShmSegment, SegmentError> ShmSegment::open_trusted(const std::string& name, const SegmentOwner& owner,
                                                          bool populate) {
  if (name.size() < 2 || name[0] != '/' || name.find('/', 1) != std::string::npos) {
    return fail(SegmentError{std::nullopt, "'" + name + "' is not a shared memory object name"});
  }
  // shm_open(name) is open("/dev/shm" + name) on Linux; opening the file directly takes O_NONBLOCK and
  // gives the fstat that judges it in one place (segment_trust.hpp).
  struct stat st {};
  auto fd = open_trusted_file(kShmDir + name, O_RDWR, owner, &st);
  if (!fd) return fail(fd.error());
  ShmSegment seg(name, *fd);
  if (auto m = seg.map(static_cast<size_t>(st.st_size), populate); !m) {
    return fail(SegmentError{std::nullopt, m.error().message});
  }
  return seg;
}

Result<ShmSegment> ShmSegment::open_existing(const std::string& name, const SegmentOwner& owner) {
  auto seg = open_trusted(name, owner);
  if (!seg) return fail(seg.error().message);
  return std::move(*seg);
}

Result<ShmSegment> ShmSegment::open_for_reading(const std::string& name, const SegmentOwner& owner) {
  auto seg = open_trusted(name, owner, false);
  if (!seg) return fail(seg.error().message);
  return std::move(*seg);
}

Result<ShmSegment> ShmSegment::open_or_create(const std::string& name, size_t bytes) {
  auto created = create(name, bytes);
  if (created) return created;
  auto opened = open_existing(name);
  if (!opened) return fail(created.error().message + "; " + opened.error().message);
  if (auto g = opened->grow(bytes); !g) return fail(g.error().message);
  return opened;
}

Status ShmSegment::unlink(const std::string& name) {
  if (::shm_unlink(name.c_str()) != 0 && errno != ENOENT) return fail(errno_text("shm_unlink", name, errno));
  return Ok{};
}

Status ShmSegment::rename_to(const std::string& new_name) {
  if (fd_ < 0) return fail("shared memory segment is not open");
  if (new_name.size() < 2 || new_name[0] != '/' || new_name.find('/', 1) != std::string::npos) {
    return fail("'" + new_name + "' is not a shared memory object name");
  }
  const std::string from = kShmDir + name_;
  const std::string to = kShmDir + new_name;
  if (::rename(from.c_str(), to.c_str()) != 0) return fail(errno_text("rename", name_ + " to " + new_name, errno));
  name_ = new_name;
  return Ok{};
}

Status ShmSegment::grow(size_t bytes) {
  if (fd_ < 0) return fail("shared memory segment is not open");
  auto current = object_size(fd_, name_);
  if (!current) return fail(current.error().message);
  if (*current < bytes) {
    if (auto r = reserve(fd_, name_, bytes); !r) return r;
  }
  const size_t target = *current < bytes ? bytes : *current;
  if (target == size_) return Ok{};
  return map(target);
}

Status ShmSegment::refresh() { return grow(0); }

Status ShmSegment::pin_for_device() {
  if (data_ == nullptr) return fail("shared memory segment is not mapped");
  if (pinned_) return Ok{};
  if (auto r = device::pin(data_, size_); !r) return fail("page-locking " + name_ + ": " + r.error().message);
  pinned_ = true;
  return Ok{};
}

}  // namespace shoal::ckpt

// ShmSegment: one POSIX shared-memory object, mapped read-write, and the names checkpoint segments
// go by. Unmapping is automatic; unlinking is explicit, because the memory must outlive the process
// that wrote it (a trainer that crashes mid-save must not take its last checkpoint with it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/result.hpp"
#include "ckpt_shm/segment_trust.hpp"

namespace shoal::ckpt {

// Naming scheme, one object per version slot of a rank:
//   "/shoal.<job>.r<rank>.v<slot>"       e.g. "/shoal.llama-7b.r3.v1"  (-> /dev/shm/shoal.llama-7b.r3.v1)
// Replicas a host keeps for peers go by "/shoal.<job>.p<rank>.s<step>" (replica_names.hpp), with the
// same on-segment layout. A job name is 1..kMaxJobNameBytes of [A-Za-z0-9_-], so that a name never
// contains '/' or '.', and "shoal.<job>." is a prefix that names every segment of one job.
inline constexpr size_t kMaxJobNameBytes = 95;

// Ok, or why `job` cannot name segments.
Status check_job_name(std::string_view job);
// The segment prefix of one host among several sharing a machine (tests, demos): "<job>-<host>", with
// every character a job name cannot hold replaced by '_' and cut to kMaxJobNameBytes.
std::string store_for_host(std::string_view job, std::string_view host);
// The segment prefix of a job nobody named, in the cluster of `lineage` (membership::View::lineage):
// "<store>-<12 hex digits of the lineage>", the store cut so that the whole fits kMaxJobNameBytes. Two
// clusters, or two runs of one, never share it; `store` itself when the lineage is 0 (unknown).
std::string store_for_lineage(std::string_view store, uint64_t lineage);
// The slot's object name (with its leading '/'); fails for an invalid job name.
Result<std::string> slot_segment_name(std::string_view job, uint32_t rank, uint32_t slot);

class ShmSegment {
 public:
  // Creates a new object of `bytes` bytes (zero-filled by the kernel). Fails if it already exists.
  static Result<ShmSegment> create(const std::string& name, size_t bytes);
  // Opens an existing object at its current size, when it is a regular file that `owner` wrote with a
  // mode no other user can read (segment_trust.hpp); a link is never followed, a FIFO never blocks.
  static Result<ShmSegment> open_existing(const std::string& name, const SegmentOwner& owner = this_process_owner());
  // The same, telling a refused object (it exists, but is not trusted) from other errors.
  static Result<ShmSegment, SegmentError> open_trusted(const std::string& name,
                                                       const SegmentOwner& owner = this_process_owner());
  // open_existing for a reader of a part (a ranged read): the same checks, but the pages are not all
  // mapped at once (no MAP_POPULATE); those read fault in then, many per fault. Mapping every page of a
  // large segment first costs tens of milliseconds per GB, whatever share of it is read.
  static Result<ShmSegment> open_for_reading(const std::string& name, const SegmentOwner& owner = this_process_owner());
  // Opens the object, creating it with `bytes` bytes when absent; an existing smaller one is grown. An
  // existing object must pass open_existing's checks for this process's user.
  static Result<ShmSegment> open_or_create(const std::string& name, size_t bytes);
  // Removes the name; mappings stay valid until unmapped. Ok when the name is already gone.
  static Status unlink(const std::string& name);

  ShmSegment() = default;
  ~ShmSegment();
  ShmSegment(ShmSegment&& other) noexcept;
  ShmSegment& operator=(ShmSegment&& other) noexcept;
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  // Grows the object to at least `bytes` and remaps it. Never shrinks: another process may map the
  // tail, and shrinking would turn its next access into SIGBUS.
  Status grow(size_t bytes);
  // Remaps when another process has grown the object since it was mapped here.
  Status refresh();
  // Gives the object a new name, keeping the mapping and its pages (already faulted in: reusing a
  // segment costs nothing, a new one costs about a second per 1.5 GB in page faults). Replaces an
  // object of that name. POSIX has no shm_rename; on Linux the objects are files in /dev/shm.
  Status rename_to(const std::string& new_name);
  // Page-locks the mapping for CUDA copies (device_copy.hpp: pin); undone before it is unmapped or
  // remapped (a grow), after which the next call pins the new mapping. Ok at once when pinned already.
  Status pin_for_device();
  bool pinned_for_device() const { return pinned_; }

  bool valid() const { return data_ != nullptr; }
  // The object's descriptor.
  int fd() const { return fd_; }
  const std::string& name() const { return name_; }
  size_t size() const { return size_; }
  std::span<std::byte> bytes() { return {data_, size_}; }
  std::span<const std::byte> bytes() const { return {data_, size_}; }

 private:
  ShmSegment(std::string name, int fd);
  Status map(size_t bytes, bool populate = true);
  static Result<ShmSegment, SegmentError> open_trusted(const std::string& name, const SegmentOwner& owner,
                                                       bool populate);
  void unpin();
  void close();

  std::string name_;
  int fd_ = -1;
  std::byte* data_ = nullptr;
  size_t size_ = 0;
  bool pinned_ = false;  // data_ is registered with the CUDA runtime
};

}  // namespace shoal::ckpt

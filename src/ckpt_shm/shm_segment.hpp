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

namespace shoal::ckpt {

// Naming scheme, one object per version slot of a rank:
//   "/shoal.<job>.r<rank>.v<slot>"       e.g. "/shoal.llama-7b.r3.v1"  (-> /dev/shm/shoal.llama-7b.r3.v1)
// Replicas that a peer will hold later are meant to go by "/shoal.<job>.r<rank>.s<step>", with the
// same on-segment layout. A job name is 1..kMaxJobNameBytes of [A-Za-z0-9_-], so that a name never
// contains '/' or '.', and "shoal.<job>." is a prefix that names every segment of one job.
inline constexpr size_t kMaxJobNameBytes = 95;

// Ok, or why `job` cannot name segments.
Status check_job_name(std::string_view job);
// The slot's object name (with its leading '/'); fails for an invalid job name.
Result<std::string> slot_segment_name(std::string_view job, uint32_t rank, uint32_t slot);

class ShmSegment {
 public:
  // Creates a new object of `bytes` bytes (zero-filled by the kernel). Fails if it already exists.
  static Result<ShmSegment> create(const std::string& name, size_t bytes);
  // Opens an existing object at its current size.
  static Result<ShmSegment> open_existing(const std::string& name);
  // Opens the object, creating it with `bytes` bytes when absent; an existing smaller one is grown.
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

  bool valid() const { return data_ != nullptr; }
  const std::string& name() const { return name_; }
  size_t size() const { return size_; }
  std::span<std::byte> bytes() { return {data_, size_}; }
  std::span<const std::byte> bytes() const { return {data_, size_}; }

 private:
  ShmSegment(std::string name, int fd);
  Status map(size_t bytes);
  void close();

  std::string name_;
  int fd_ = -1;
  std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace shoal::ckpt

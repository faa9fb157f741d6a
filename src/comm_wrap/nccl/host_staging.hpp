// Host memory through NCCL: NCCL's kernels read and write device memory only, but the generic
// Communicator interface also carries small host buffers (ElasticLoop's step agreement and state
// broadcast, the node-health records, a restore's exchange). HostStaging tells host pointers apart
// (cudaPointerGetAttributes) and carries such a buffer through a device buffer of its own that grows
// as needed: copied in before the collective, out after it completed.
#pragma once

#include <cstddef>

namespace shoal::comm {

// Whether the GPU cannot be handed `p` directly: pageable or pinned host memory, or memory CUDA does not
// know. Device and managed memory go to NCCL as they are.
bool needs_staging(const void* p);

class HostStaging {
 public:
  HostStaging() = default;
  ~HostStaging();
  HostStaging(const HostStaging&) = delete;
  HostStaging& operator=(const HostStaging&) = delete;

  // A device buffer of at least `bytes` (the previous contents are not kept when it grows). Throws
  // shoal::Error when CUDA cannot allocate it.
  void* reserve(size_t bytes);
  // Synchronous copies between host memory and the buffer (complete when they return).
  void copy_in(const void* host, size_t bytes);
  void copy_out(void* host, size_t bytes) const;
  void* device() const { return buf_; }

 private:
  void* buf_ = nullptr;
  size_t capacity_ = 0;
};

}  // namespace shoal::comm

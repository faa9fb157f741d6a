// In-memory checkpoints through libshoal: a rank saves named buffers for a step into its host's
// shared memory (zero-copy: it writes straight into the segment), commits, and goes on training while
// the host's agent copies the version to a peer host. After the world changes, every rank of the new
// view restores the same step: the newest one that every rank of its time saved completely, loaded
// from this host's memory when it is here, else from a peer that holds it.
//
//   auto save = session->begin_save(*comm, step, {{"params", bytes}, {"optimizer", opt_bytes}});
//   save->write("params", params_bytes);                        // copy and checksum in one pass
//   save->write_from_device("optimizer", dev_ptr, stream);      // GPU: async copy into pinned memory
//   save->commit();
//   ...
//   if (auto r = session->restore(*comm)) load(r->buffer("params")), step = r->step + 1;
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "shoal/api.hpp"

namespace shoal {

struct CheckpointBuffer {
  std::string name;  // 1..103 bytes, unique within a save
  uint64_t bytes = 0;
};

// One save in progress. Not thread-safe. Destroying it without commit() abandons it: the previous
// complete version stays the newest.
class SHOAL_API CheckpointSave {
 public:
  virtual ~CheckpointSave() = default;
  // The writable bytes of one buffer, inside the shared-memory segment. Throws shoal::Error for a
  // name that was not declared.
  virtual std::span<std::byte> buffer(std::string_view name) = 0;
  // Copies `bytes` (exactly the buffer's size) into the buffer and checksums it in the same pass, so
  // commit() need not read it again.
  virtual void write(std::string_view name, std::span<const std::byte> bytes) = 0;
  // GPU hosts: starts copying the buffer's bytes from CUDA device memory with cudaMemcpyAsync on
  // `cuda_stream` (a cudaStream_t; nullptr: the default stream) and returns without waiting. The first
  // device copy into a slot page-locks its segment (cudaHostRegister), so copies run at pinned-memory
  // speed from then on. commit() waits for the streams, then checksums. Throws shoal::Error where
  // shoal was built without CUDA, or for a pointer that is not device memory.
  virtual void write_from_device(std::string_view name, const void* device_bytes, void* cuda_stream = nullptr) = 0;
  // Checksums what was filled through buffer(), seals the version and tells the agent, which
  // replicates it in the background. Throws shoal::Error.
  virtual void commit() = 0;
  virtual void abandon() = 0;
};

// A version loaded for a restore; its bytes are verified against their checksums.
struct SHOAL_API RestoredCheckpoint {
  uint64_t step = 0;
  uint32_t saved_world = 0;  // the world size when it was saved
  uint32_t saved_rank = 0;   // whose state this is
  std::string source;        // "local", or the member name of the peer it came from
  double seconds = 0;        // time to load it (local read or fetch, with verification)

  struct Entry {
    std::string name;
    uint64_t offset = 0;
    uint64_t size = 0;
  };
  std::vector<std::byte> data;  // the whole version, as stored
  std::vector<Entry> entries;

  // One buffer's bytes; throws shoal::Error for an unknown name. After Session::restore_into, whose
  // bytes went to the caller's memory, `data` is empty and this throws for every name.
  std::span<const std::byte> buffer(std::string_view name) const;
  bool has(std::string_view name) const;
};

// The step Session::agree_restore settled on: every rank of its saved world completed it and each of
// their versions is held by some host of the job.
struct RestorePoint {
  uint64_t step = 0;
  uint32_t saved_world = 0;
};

// Bytes [offset, offset + bytes) of one buffer of a saved version, for Session::read_ranges to copy to
// `into` (bytes writable bytes of the caller's).
struct ByteRange {
  std::string buffer;
  uint64_t offset = 0;
  uint64_t bytes = 0;
  std::byte* into = nullptr;
};

// What Session::restore_into shows the caller of the version it is about to load, so that the caller
// can say where each buffer goes before any byte of it is copied.
struct RestoreLayout {
  uint64_t step = 0;
  uint32_t saved_world = 0;
  uint32_t saved_rank = 0;
  std::string source;  // "local", or the member name of the peer it comes from
  std::vector<RestoredCheckpoint::Entry> entries;  // every buffer, in the order it was saved
  // The first buffer's bytes, already verified against its checksum: room for a description of the
  // others (names, shapes, types) that the caller needs to place them.
  std::span<const std::byte> first;
};

// Returns one destination per entry of the layout, in its order: exactly entry.size writable bytes, or
// an empty span for a buffer the caller does not want. Each buffer is copied in and verified against
// its checksum in one pass. A throw ends the restore on every rank of the communicator with
// shoal::Error naming the rank and its message (a caller's state that does not match what was saved
// is not a reason to try an older step) -- except shoal::VersionRefused, which refuses this copy only.
using RestorePlacer = std::function<std::vector<std::span<std::byte>>(const RestoreLayout& layout)>;

}  // namespace shoal

// persist_write: writing one version's file for a PersistDir: the version's prefix copied out and
// validated on the copy, then its buffers through a bounce buffer, checksummed on the copy (so what reaches
// the disk is what the checksums vouch for), then fsync. Internal to ckpt_shm.
#pragma once

#include <atomic>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "ckpt_shm/persist_dir.hpp"
#include "ckpt_shm/version_layout.hpp"

namespace shoal::ckpt {

// A version's prefix [0, data_offset) as copied out of the source and validated on the copy.
struct Snapshot {
  std::vector<std::byte> prefix;
  VersionInfo info;
};

// Copies and validates the prefix of `version`; fails when the bytes are not a sealed version, or the
// header changed between its two reads.
Result<Snapshot> snapshot_prefix(std::span<const std::byte> version);

// Why writing a version's temporary file stopped: the counter it counts under, and a sentence.
struct WriteError {
  uint64_t PersistCounters::*counter;
  std::string message;
};

// Writes the version to `fd` (a new temporary file, named `tmp` in messages; closed here whatever
// happens): the validated prefix, then the buffers copied from the source through a bounce buffer and
// checksummed on the copy; compares the checksums with the table, then fsyncs. Stops (cancelled) as soon
// as `cancel` is raised.
Result<Ok, WriteError> write_version_file(std::span<const std::byte> version, const Snapshot& s, int fd,
                                          const std::string& tmp, const std::atomic<bool>* cancel);

bool cancel_raised(const std::atomic<bool>* cancel);

}  // namespace shoal::ckpt

// persist_write: one version's file: validated prefix, bounce-buffer copy checksummed on the copy, fsync.
#include "ckpt_shm/persist_write.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "ckpt_shm/checksum.hpp"
#include "ckpt_shm/persist_io.hpp"

namespace shoal::ckpt {
namespace {

// Feeds the part of each buffer that lies in the piece [at, at + piece.size()) to its checksum.
// `first` is the first buffer that may still get bytes (buffers are in offset order).
void feed_checksums(const std::vector<BufferInfo>& buffers, std::vector<BufferChecksum>& sums, size_t& first,
                    uint64_t at, std::span<const std::byte> piece) {
  const uint64_t end = at + piece.size();
  while (first < buffers.size() && buffers[first].offset + buffers[first].size <= at) ++first;
  for (size_t i = first; i < buffers.size() && buffers[i].offset < end; ++i) {
    const uint64_t lo = std::max(buffers[i].offset, at);
    const uint64_t hi = std::min(buffers[i].offset + buffers[i].size, end);
    if (lo < hi) sums[i].update(piece.subspan(lo - at, hi - lo));
  }
}

std::string not_a_version(const LayoutError& e) {
  return "the bytes are not a sealed checkpoint version (" + layout_text(e) + ")";
}

using Counter = uint64_t PersistCounters::*;

Unexpected<WriteError> stop(Counter c, std::string message) { return fail(WriteError{c, std::move(message)}); }

}  // namespace

bool cancel_raised(const std::atomic<bool>* cancel) {
  return cancel != nullptr && cancel->load(std::memory_order_relaxed);
}

Result<Snapshot> snapshot_prefix(std::span<const std::byte> version) {
  auto length = prefix_bytes(version);  // reads a copy of the header
  if (!length) return fail(not_a_version(length.error()));
  Snapshot s;
  s.prefix.assign(version.begin(), version.begin() + static_cast<std::ptrdiff_t>(std::min(*length, version.size())));
  auto info = decode_prefix(s.prefix);
  if (!info) return fail(not_a_version(info.error()));
  // The header may have been rewritten between the two reads: only the copy counts.
  if (info->data_offset != s.prefix.size()) return fail(std::string("the version was overwritten while being read"));
  if (info->total_bytes > version.size()) {
    return fail(not_a_version({LayoutCause::truncated, "the version needs " + std::to_string(info->total_bytes) +
                                                           " bytes, got " + std::to_string(version.size())}));
  }
  s.info = std::move(*info);
  return s;
}

Result<Ok, WriteError> write_version_file(std::span<const std::byte> version, const Snapshot& s, int tmp_fd,
                                          const std::string& tmp, const std::atomic<bool>* cancel) {
  Fd fd(tmp_fd);
  const std::string cancelled = "persisting " + version_text(s.info.id.rank, s.info.id.step) + " was cancelled";
  for (size_t at = 0; at < s.prefix.size(); at += PersistDir::kPieceBytes) {
    if (cancel_raised(cancel)) return stop(&PersistCounters::cancelled, cancelled);
    const auto piece = std::span(s.prefix).subspan(at, std::min(PersistDir::kPieceBytes, s.prefix.size() - at));
    if (int err = write_all(fd.get(), piece); err != 0)
      return stop(&PersistCounters::failed, io_error("write", tmp, err));
  }

  const uint64_t total = s.info.total_bytes;
  const auto bounce_bytes = static_cast<size_t>(std::min<uint64_t>(PersistDir::kPieceBytes, total - s.prefix.size()));
  auto bounce = std::make_unique_for_overwrite<std::byte[]>(bounce_bytes);
  std::vector<BufferChecksum> sums(s.info.buffers.size());
  size_t first = 0;
  for (uint64_t at = s.prefix.size(); at < total;) {
    if (cancel_raised(cancel)) return stop(&PersistCounters::cancelled, cancelled);
    const auto piece = std::span(bounce.get(), static_cast<size_t>(std::min<uint64_t>(bounce_bytes, total - at)));
    std::memcpy(piece.data(), version.data() + at, piece.size());
    feed_checksums(s.info.buffers, sums, first, at, piece);
    if (int err = write_all(fd.get(), piece); err != 0)
      return stop(&PersistCounters::failed, io_error("write", tmp, err));
    // Starts writeback of this piece now, so the disk works while the next piece is copied and the
    // closing fsync has little left to flush. Advisory: an error here shows again at fsync.
    (void)::sync_file_range(fd.get(), static_cast<off_t>(at), static_cast<off_t>(piece.size()), SYNC_FILE_RANGE_WRITE);
    at += piece.size();
  }
  for (size_t i = 0; i < sums.size(); ++i) {
    if (sums[i].finish() != s.info.buffers[i].checksum) {
      return stop(&PersistCounters::refused,
                  version_text(s.info.id.rank, s.info.id.step) + " was overwritten while being persisted (buffer '" +
                      s.info.buffers[i].name + "' no longer matches its checksum); nothing was written");
    }
  }
  if (cancel_raised(cancel)) return stop(&PersistCounters::cancelled, cancelled);
  if (::fsync(fd.get()) != 0) return stop(&PersistCounters::failed, io_error("sync", tmp, errno));
  if (int err = fd.close(); err != 0) return stop(&PersistCounters::failed, io_error("close", tmp, err));
  return Ok{};
}


}  // namespace shoal::ckpt

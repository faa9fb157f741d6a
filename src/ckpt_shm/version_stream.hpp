// Streaming one sealed checkpoint version to a peer, sans IO: what the sender writes, and a receiver
// that says where incoming bytes go and verifies them as they arrive. No sockets here; the agent's
// transfer code moves the bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "base/result.hpp"
#include "ckpt_shm/checksum.hpp"
#include "ckpt_shm/chunk_lists.hpp"
#include "ckpt_shm/version_layout.hpp"

namespace shoal::ckpt {

// The wire format of one version: its prefix [0, data_offset) exactly as in the segment (header with
// state sealed, table, padding), then each buffer's bytes in table order, back to back. The
// alignment gaps between buffers are not sent: the receiver recomputes the canonical offsets. The
// receiver learns the prefix length from the header (prefix_bytes), and everything else from the
// prefix, which it validates (decode_prefix) before it asks for a destination.

// What a sender writes, in order (empty buffers are left out). `info` must be decode_version's
// answer for this very segment (a segment shorter than info.total_bytes aborts: a caller's bug).
std::vector<std::span<const std::byte>> stream_pieces(std::span<const std::byte> segment, const VersionInfo& info);
// The length of that stream: the prefix and every buffer.
uint64_t stream_bytes(const VersionInfo& info);

// The most bytes next() offers at once: what one read from the socket may fill. 4 MiB, what the raw
// TCP baseline reads: with 1 MiB a 1 GiB stream over loopback took about 15% longer (four times the
// calls, each a wakeup and a window update). The checksum still advances while the buffer arrives,
// group of chunks by group of chunks (see advance), not in one pass at its end.
inline constexpr size_t kReceiveSliceBytes = 4 * 1024 * 1024;

// Receives one version's stream into a destination segment, zero copy: buffer bytes are written by
// the caller (from the socket) straight to their canonical offset in the destination. Each buffer is
// verified against the prefix's checksum as its last byte arrives; after the last one the
// destination is sealed. A refusal is final: the receiver stays failed and the destination unsealed.
//
//   VersionReceiver r;
//   while (!r.complete()) {
//     auto p = r.advance(read_some(socket, r.next()));  // an error: refuse the stream
//     if (*p == Progress::need_destination) r.attach(segment_of(r.info().total_bytes));
//   }
//
// (attach itself completes a version whose buffers are all empty: test complete() after it.)
class VersionReceiver {
 public:
  enum class Progress {
    need_destination,  // the prefix is complete and valid: read info(), then attach a destination
    more,              // write more bytes into next()
    complete,          // every byte arrived and verified; the destination is sealed
  };

  VersionReceiver() = default;
  // A stream of at most `max_stream_bytes` (what the sender announced, itself checked against what the
  // receiver expects): a header announcing a longer prefix is refused as malformed before the prefix is
  // allocated, and so is a table whose stream_bytes() is longer.
  explicit VersionReceiver(uint64_t max_stream_bytes) : max_stream_bytes_(max_stream_bytes) {}

  // Where the next bytes of the stream go: at most kReceiveSliceBytes, never across a buffer's end.
  // Empty while a destination is needed, once complete, and once failed.
  std::span<std::byte> next();
  // n bytes were written at the start of the last next(). Verifies the header once it is complete,
  // the prefix once it is complete, and each buffer once its last byte arrives (a mismatch is
  // data_checksum naming the buffer); a buffer's bytes are checksummed in whole groups of three
  // chunks as soon as each group is in. n larger than next() is refused as malformed.
  Result<Progress, LayoutError> advance(size_t n);
  // The destination, at least info().total_bytes long, once advance said need_destination; with room
  // for the chunk lists after the version (chunk_lists.hpp: segment_bytes_for), they are kept there. Copies
  // the prefix in with the state left `writing`, so a crash or a stream that stops leaves a version
  // that is never returned. A version without data bytes is sealed here and complete() at once.
  Status attach(std::span<std::byte> destination);
  // Instead of attach(): a scattered receive, for a reader that wants the buffers in memory of its own
  // (a restore straight into a trainer's tensors) rather than in a segment. Gives buffers first,
  // first+1, ... one destination each, of exactly the buffer's size. Buffers may be given in several
  // calls: once the buffers given so far are complete and verified, advance says need_destination
  // again (so the first buffer can be read, e.g. a description of the others, before they are placed).
  // Nothing is sealed; complete() means every buffer arrived and matched its checksum.
  Status attach_buffers(size_t first, std::vector<std::span<std::byte>> destinations);
  // The destination of a buffer given to attach_buffers (empty when none was).
  std::span<const std::byte> buffer_destination(size_t index) const;
  // The index of the next buffer a scattered receive needs a destination for.
  size_t buffers_attached() const { return scattered_.size(); }

  // The received version's header and table; empty until the prefix is complete.
  const VersionInfo& info() const { return info_; }
  uint64_t received() const { return received_; }
  // stream_bytes(info()) once the prefix is complete, 0 before.
  uint64_t expected() const { return expected_; }
  bool complete() const { return phase_ == Phase::complete; }
  bool failed() const { return phase_ == Phase::failed; }

 private:
  enum class Phase { header, prefix, need_destination, data, complete, failed };

  Result<Progress, LayoutError> refuse(LayoutCause cause, std::string detail);
  Result<Progress, LayoutError> prefix_arrived(size_t n);
  Result<Progress, LayoutError> data_arrived(size_t n);
  // A new checksum for buffer `buffer_`, writing its chunk crcs into the destination's lists when kept.
  void start_buffer_sum();
  // Where buffer `buffer_`'s bytes go: its place in the destination, or its own destination.
  std::span<std::byte> buffer_bytes();
  // Moves past finished (and empty) buffers, verifying each; seals after the last one.
  Result<Progress, LayoutError> settle_buffers();
  Progress progress() const;

  Phase phase_ = Phase::header;
  std::vector<std::byte> prefix_ = std::vector<std::byte>(kHeaderBytes);
  size_t prefix_filled_ = 0;
  VersionInfo info_;
  std::span<std::byte> destination_;
  bool scattered_mode_ = false;                 // attach_buffers instead of attach
  std::vector<std::span<std::byte>> scattered_;  // buffer i's own destination
  size_t buffer_ = 0;            // the buffer being received
  uint64_t buffer_filled_ = 0;   // its bytes received so far
  uint64_t buffer_checked_ = 0;  // of those, the bytes given to buffer_sum_ (a prefix)
  BufferChecksum buffer_sum_;
  std::optional<ChunkLists> lists_;  // where the destination keeps the chunk lists (room after the version)
  uint64_t received_ = 0;
  uint64_t expected_ = 0;
  uint64_t max_stream_bytes_ = UINT64_MAX;
  std::optional<LayoutError> error_;
};

}  // namespace shoal::ckpt

// The sender's pieces of a version stream and the receiver's state machine (see version_stream.hpp).
#include "ckpt_shm/version_stream.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <utility>

namespace shoal::ckpt {

std::vector<std::span<const std::byte>> stream_pieces(std::span<const std::byte> segment, const VersionInfo& info) {
  // info describes this segment (it came from decoding it); anything else is a bug that would send
  // bytes from past the mapping.
  if (segment.size() < info.total_bytes || info.data_offset > info.total_bytes) std::abort();
  std::vector<std::span<const std::byte>> pieces;
  pieces.reserve(info.buffers.size() + 1);
  pieces.push_back(segment.first(info.data_offset));
  for (const auto& b : info.buffers) {
    if (b.size > 0) pieces.push_back(segment.subspan(b.offset, b.size));
  }
  return pieces;
}

uint64_t stream_bytes(const VersionInfo& info) {
  uint64_t n = info.data_offset;
  for (const auto& b : info.buffers) n += b.size;
  return n;
}

std::span<std::byte> VersionReceiver::next() {
  switch (phase_) {
    case Phase::header:
    case Phase::prefix: {
      const size_t left = prefix_.size() - prefix_filled_;
      return std::span<std::byte>(prefix_).subspan(prefix_filled_, std::min(left, kReceiveSliceBytes));
    }
    case Phase::data: {
      const auto& b = info_.buffers[buffer_];
      const uint64_t left = b.size - buffer_filled_;
      return buffer_bytes().subspan(buffer_filled_, std::min<uint64_t>(left, kReceiveSliceBytes));
    }
    case Phase::need_destination:
    case Phase::complete:
    case Phase::failed:
      break;
  }
  return {};
}

Result<VersionReceiver::Progress, LayoutError> VersionReceiver::advance(size_t n) {
  if (phase_ == Phase::failed) return fail(*error_);
  if (n > next().size()) {
    return refuse(LayoutCause::malformed,
                  std::to_string(n) + " bytes received into a slice of " + std::to_string(next().size()));
  }
  if (n == 0) return progress();
  received_ += n;
  if (phase_ == Phase::data) return data_arrived(n);
  return prefix_arrived(n);
}

Status VersionReceiver::attach(std::span<std::byte> destination) {
  if (phase_ != Phase::need_destination || scattered_mode_) {
    return fail("a destination is attached once, when the prefix is complete");
  }
  if (destination.size() < info_.total_bytes) {
    return fail("a destination of " + std::to_string(destination.size()) + " bytes cannot hold step " +
                std::to_string(info_.id.step) + " of " + std::to_string(info_.total_bytes) + " bytes");
  }
  if (auto b = begin_copied_version(destination, prefix_); !b) return b;
  destination_ = destination;
  // Room after the version for its chunk lists: each buffer's crcs go there as they are verified.
  if (ChunkLists lists(info_); lists.fit(destination.size())) lists_.emplace(std::move(lists));
  start_buffer_sum();
  prefix_ = {};  // up to kMaxPrefixBytes; the destination holds it now
  phase_ = Phase::data;
  // Empty buffers need no bytes; if every buffer is empty, the version is complete now.
  auto settled = settle_buffers();
  if (!settled) return fail(std::string(name(settled.error().cause)) + ": " + settled.error().detail);
  return Ok{};
}

Status VersionReceiver::attach_buffers(size_t first, std::vector<std::span<std::byte>> destinations) {
  if (phase_ != Phase::need_destination) return fail("buffers are attached when the receiver asks for them");
  if (!scattered_mode_ && (first != 0 || destination_.data() != nullptr)) {
    return fail("a receive is either scattered (attach_buffers from buffer 0) or into one destination (attach)");
  }
  if (first != scattered_.size()) {
    return fail("buffer " + std::to_string(scattered_.size()) + " is the next to attach, not " + std::to_string(first));
  }
  if (first + destinations.size() > info_.buffers.size()) {
    return fail("step " + std::to_string(info_.id.step) + " has " + std::to_string(info_.buffers.size()) +
                " buffers, not " + std::to_string(first + destinations.size()));
  }
  for (size_t i = 0; i < destinations.size(); ++i) {
    const auto& b = info_.buffers[first + i];
    if (destinations[i].size() != b.size) {
      return fail("the destination of buffer '" + b.name + "' holds " + std::to_string(destinations[i].size()) +
                  " bytes, not " + std::to_string(b.size));
    }
  }
  if (!scattered_mode_) prefix_ = {};
  scattered_mode_ = true;
  for (auto& d : destinations) scattered_.push_back(d);
  phase_ = Phase::data;
  auto settled = settle_buffers();
  if (!settled) return fail(std::string(name(settled.error().cause)) + ": " + settled.error().detail);
  return Ok{};
}

std::span<const std::byte> VersionReceiver::buffer_destination(size_t index) const {
  return index < scattered_.size() ? scattered_[index] : std::span<const std::byte>{};
}

void VersionReceiver::start_buffer_sum() {
  uint32_t* values = nullptr;
  if (lists_ && !scattered_mode_ && buffer_ < info_.buffers.size()) values = lists_->values(destination_, buffer_);
  buffer_sum_ = BufferChecksum(values);
}

std::span<std::byte> VersionReceiver::buffer_bytes() {
  if (scattered_mode_) return scattered_[buffer_];
  const auto& b = info_.buffers[buffer_];
  return destination_.subspan(b.offset, b.size);
}

Result<VersionReceiver::Progress, LayoutError> VersionReceiver::refuse(LayoutCause cause, std::string detail) {
  phase_ = Phase::failed;
  error_ = LayoutError{cause, std::move(detail)};
  return fail(*error_);
}

VersionReceiver::Progress VersionReceiver::progress() const {
  switch (phase_) {
    case Phase::need_destination:
      return Progress::need_destination;
    case Phase::complete:
      return Progress::complete;
    case Phase::header:
    case Phase::prefix:
    case Phase::data:
    case Phase::failed:
      break;
  }
  return Progress::more;
}

Result<VersionReceiver::Progress, LayoutError> VersionReceiver::prefix_arrived(size_t n) {
  prefix_filled_ += n;
  if (prefix_filled_ < prefix_.size()) return Progress::more;
  if (phase_ == Phase::header) {
    // The header alone says how long the prefix is; bounded, so a hostile peer cannot make us
    // allocate more than kMaxPrefixBytes before anything is checksummed.
    auto length = prefix_bytes(prefix_);
    if (!length) return refuse(length.error().cause, length.error().detail);
    if (*length > max_stream_bytes_) {
      return refuse(LayoutCause::malformed, "a prefix of " + std::to_string(*length) + " bytes in a stream of at most " +
                                                std::to_string(max_stream_bytes_));
    }
    prefix_.resize(*length);
    phase_ = Phase::prefix;
    return Progress::more;  // data_offset is at least a page, more than the header
  }
  auto info = decode_prefix(prefix_);
  if (!info) return refuse(info.error().cause, info.error().detail);
  if (stream_bytes(*info) > max_stream_bytes_) {
    return refuse(LayoutCause::malformed, "a version of " + std::to_string(stream_bytes(*info)) +
                                              " stream bytes in a stream of at most " + std::to_string(max_stream_bytes_));
  }
  info_ = std::move(*info);
  expected_ = stream_bytes(info_);
  phase_ = Phase::need_destination;
  return Progress::need_destination;
}

Result<VersionReceiver::Progress, LayoutError> VersionReceiver::data_arrived(size_t n) {
  const auto& b = info_.buffers[buffer_];
  buffer_filled_ += n;
  // Whole groups of three chunks are checksummed as soon as they are complete (the three-way loop:
  // memory speed), the rest when the buffer's last byte arrives. Pieces off a socket come in any
  // size: checksumming each as it came would run every chunk it splits on one dependency chain, at a
  // third of the speed. A group is 192 KiB, so the bytes are still in cache when they are checked.
  constexpr uint64_t kGroup = 3 * kChecksumChunkBytes;
  const uint64_t ready = buffer_filled_ == b.size ? b.size : buffer_filled_ / kGroup * kGroup;
  if (ready > buffer_checked_) {
    buffer_sum_.update(buffer_bytes().subspan(buffer_checked_, ready - buffer_checked_));
    buffer_checked_ = ready;
  }
  return settle_buffers();
}

Result<VersionReceiver::Progress, LayoutError> VersionReceiver::settle_buffers() {
  while (buffer_ < info_.buffers.size() && buffer_filled_ == info_.buffers[buffer_].size) {
    const auto& b = info_.buffers[buffer_];
    if (buffer_sum_.finish() != b.checksum) {
      return refuse(LayoutCause::data_checksum,
                    "buffer '" + b.name + "' of step " + std::to_string(info_.id.step) + " fails its checksum");
    }
    ++buffer_;
    buffer_filled_ = 0;
    buffer_checked_ = 0;
    start_buffer_sum();
  }
  if (buffer_ < info_.buffers.size()) {
    if (scattered_mode_ && buffer_ >= scattered_.size()) {  // the next buffers' destinations are to come
      phase_ = Phase::need_destination;
      return Progress::need_destination;
    }
    return Progress::more;
  }
  if (scattered_mode_) {  // nothing to seal: the caller's memory is no version
    phase_ = Phase::complete;
    return Progress::complete;
  }
  if (auto sealed = mark_sealed(destination_); !sealed) {
    return refuse(LayoutCause::malformed, "the destination changed while receiving: " + sealed.error().message);
  }
  phase_ = Phase::complete;
  return Progress::complete;
}

}  // namespace shoal::ckpt

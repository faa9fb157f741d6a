// Length-prefixed TCP frames: writing, and reassembly with limits.
#include "wire/frame.hpp"

#include <string>

namespace shoal::wire {

void append_frame(std::vector<std::byte>& out, uint8_t type, std::span<const std::byte> payload) {
  const uint32_t len = static_cast<uint32_t>(payload.size() + 1);
  out.push_back(std::byte(len >> 24));
  out.push_back(std::byte(len >> 16));
  out.push_back(std::byte(len >> 8));
  out.push_back(std::byte(len));
  out.push_back(std::byte(type));
  out.insert(out.end(), payload.begin(), payload.end());
}

Result<Ok, DecodeError> FrameReader::feed(std::span<const std::byte> bytes) {
  if (failed_) return Unexpected<DecodeError>{{RejectCause::malformed, "stream already failed"}};
  buf_.insert(buf_.end(), bytes.begin(), bytes.end());
  size_t pos = 0;
  while (buf_.size() - pos >= 4) {
    const std::byte* p = buf_.data() + pos;
    const uint32_t len = (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
    if (len == 0) {
      failed_ = true;
      return Unexpected<DecodeError>{{RejectCause::malformed, "zero-length frame"}};
    }
    if (len - 1 > max_payload_) {
      failed_ = true;
      return Unexpected<DecodeError>{{RejectCause::oversized, "frame of " + std::to_string(len - 1) +
                                                                   " bytes > limit " + std::to_string(max_payload_)}};
    }
    if (buf_.size() - pos < 4 + size_t(len)) break;
    Frame f;
    f.type = static_cast<uint8_t>(p[4]);
    f.payload.assign(p + kFrameHeaderBytes, p + 4 + len);
    ready_.push_back(std::move(f));
    pos += 4 + len;
  }
  buf_.erase(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(pos));
  return Ok{};
}

std::optional<Frame> FrameReader::next() {
  if (ready_.empty()) return std::nullopt;
  Frame f = std::move(ready_.front());
  ready_.pop_front();
  return f;
}

}  // namespace shoal::wire

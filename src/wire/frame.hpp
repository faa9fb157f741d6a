// TCP framing: every message on a shoal connection is [u32 length, big-endian][u8 type][payload],
// where length counts the type byte and the payload. FrameReader reassembles frames from a byte
// stream and refuses oversized or empty frames before buffering them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <vector>

#include "base/result.hpp"
#include "wire/reject.hpp"

namespace shoal::wire {

inline constexpr size_t kFrameHeaderBytes = 5;

// The frame types of a shoal connection: the client sends a hello (which channel, from whom) and one
// request; the server answers with one response. A keyed connection adds the handshake's two later
// messages (stream_handshake.hpp) and carries bulk checkpoint bytes as sealed data frames
// (frame_cipher.hpp); an open one sends those bytes raw, unframed.
enum class FrameType : uint8_t { hello = 1, request = 2, response = 3, handshake = 4, data = 5 };
constexpr uint8_t type_byte(FrameType t) { return static_cast<uint8_t>(t); }

struct Frame {
  uint8_t type = 0;
  std::vector<std::byte> payload;
};

// Appends one frame to out.
void append_frame(std::vector<std::byte>& out, uint8_t type, std::span<const std::byte> payload);

class FrameReader {
 public:
  explicit FrameReader(size_t max_payload_bytes) : max_payload_(max_payload_bytes) {}

  // Adds received bytes. After an error the reader stays failed: the connection must be closed.
  Result<Ok, DecodeError> feed(std::span<const std::byte> bytes);
  // The next complete frame, if one has arrived.
  std::optional<Frame> next();
  // Bytes held that do not yet form a complete frame (a connection closing with these was truncated).
  size_t pending_bytes() const { return buf_.size(); }

 private:
  size_t max_payload_;
  std::vector<std::byte> buf_;
  std::deque<Frame> ready_;
  bool failed_ = false;
};

}  // namespace shoal::wire

// Reading and writing single frames (wire/frame.hpp) on a TCP socket with Asio. A read takes exactly
// one frame off the stream, no byte more, so a connection can change hands after its hello.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>
#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "base/result.hpp"
#include "wire/frame.hpp"
#include "wire/reject.hpp"

namespace shoal::net {

namespace asio = boost::asio;

struct FrameReadError {
  enum class Kind : uint8_t {
    closed,     // the peer closed (or the socket was closed) before the frame began
    truncated,  // the stream ended inside a frame
    rejected,   // the length header was refused (zero, or above the limit)
    io,         // any other socket error
  };
  Kind kind = Kind::io;
  boost::system::error_code ec;
  wire::DecodeError reject{wire::RejectCause::malformed, {}};
};

using FrameReadDone = std::function<void(Result<wire::Frame, FrameReadError>)>;

// Reads one frame whose payload is at most max_payload_bytes. The caller keeps `socket` alive until
// `done` runs (capture the owner in `done`) and bounds the time with its own deadline.
void async_read_frame(asio::ip::tcp::socket& socket, size_t max_payload_bytes, FrameReadDone done);

// One frame's bytes, ready for async_write.
std::vector<std::byte> frame_bytes(uint8_t type, std::span<const std::byte> payload);

}  // namespace shoal::net

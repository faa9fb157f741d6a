// One-frame reads: the 4-byte length first (checked by FrameReader before anything is buffered),
// then exactly the announced bytes, into a payload that grows as they arrive (arrival_buffer.hpp).
#include "net/frame_io.hpp"

#include <array>
#include <boost/asio/read.hpp>
#include <memory>

#include "net/arrival_buffer.hpp"

namespace shoal::net {
namespace {

struct ReadState {
  explicit ReadState(size_t max_payload, FrameReadDone d) : reader(max_payload), done(std::move(d)) {}
  wire::FrameReader reader;
  std::array<std::byte, 4> header{};
  size_t payload_bytes = 0;  // announced: the frame's length less its type byte
  wire::Frame frame;         // its payload grows as bytes arrive
  FrameReadDone done;
};

FrameReadError io_error(boost::system::error_code ec, bool inside_frame) {
  FrameReadError e;
  e.ec = ec;
  if (ec == asio::error::eof || ec == asio::error::connection_reset || ec == asio::error::operation_aborted ||
      ec == asio::error::bad_descriptor) {
    e.kind = inside_frame ? FrameReadError::Kind::truncated : FrameReadError::Kind::closed;
  } else {
    e.kind = FrameReadError::Kind::io;
  }
  return e;
}

// Reads the payload's next part (and, first, the type byte before it), growing the payload by
// grow_for_arrival, until all payload_bytes are in.
void read_body(asio::ip::tcp::socket& socket, std::shared_ptr<ReadState> st, bool first) {
  const size_t filled = st->frame.payload.size();
  if (!first && filled == st->payload_bytes) {
    st->done(std::move(st->frame));
    return;
  }
  st->frame.payload.resize(grow_for_arrival(filled, st->payload_bytes));
  const auto part = asio::buffer(st->frame.payload.data() + filled, st->frame.payload.size() - filled);
  const auto on_read = [&socket, st](boost::system::error_code ec, size_t) {
    if (ec) {
      st->done(Unexpected<FrameReadError>{io_error(ec, true)});
      return;
    }
    read_body(socket, st, false);
  };
  if (first) {
    std::array<asio::mutable_buffer, 2> parts = {asio::buffer(&st->frame.type, 1), part};
    asio::async_read(socket, parts, on_read);
  } else {
    asio::async_read(socket, part, on_read);
  }
}

}  // namespace

void async_read_frame(asio::ip::tcp::socket& socket, size_t max_payload_bytes, FrameReadDone done) {
  auto st = std::make_shared<ReadState>(max_payload_bytes, std::move(done));
  asio::async_read(socket, asio::buffer(st->header), [&socket, st](boost::system::error_code ec, size_t n) {
    if (ec) {
      st->done(Unexpected<FrameReadError>{io_error(ec, n > 0)});
      return;
    }
    // The reader checks the length (zero, above the limit) before anything more is read.
    if (auto fed = st->reader.feed(st->header); !fed) {
      FrameReadError e;
      e.kind = FrameReadError::Kind::rejected;
      e.reject = fed.error();
      st->done(Unexpected<FrameReadError>{e});
      return;
    }
    const uint32_t len = (uint32_t(st->header[0]) << 24) | (uint32_t(st->header[1]) << 16) |
                         (uint32_t(st->header[2]) << 8) | uint32_t(st->header[3]);
    st->payload_bytes = len - 1;  // len >= 1 and len - 1 <= max_payload_bytes: the reader refused others
    read_body(socket, st, true);
  });
}

std::vector<std::byte> frame_bytes(uint8_t type, std::span<const std::byte> payload) {
  std::vector<std::byte> out;
  out.reserve(wire::kFrameHeaderBytes + payload.size());
  wire::append_frame(out, type, payload);
  return out;
}

}  // namespace shoal::net

// One-frame reads: the 4-byte length first (checked by FrameReader before anything is buffered),
// then exactly the announced bytes.
#include "net/frame_io.hpp"

#include <array>
#include <boost/asio/read.hpp>
#include <memory>

namespace shoal::net {
namespace {

struct ReadState {
  explicit ReadState(size_t max_payload, FrameReadDone d) : reader(max_payload), done(std::move(d)) {}
  wire::FrameReader reader;
  std::array<std::byte, 4> header{};
  std::vector<std::byte> body;
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

}  // namespace

void async_read_frame(asio::ip::tcp::socket& socket, size_t max_payload_bytes, FrameReadDone done) {
  auto st = std::make_shared<ReadState>(max_payload_bytes, std::move(done));
  asio::async_read(socket, asio::buffer(st->header), [&socket, st](boost::system::error_code ec, size_t n) {
    if (ec) {
      st->done(Unexpected<FrameReadError>{io_error(ec, n > 0)});
      return;
    }
    if (auto fed = st->reader.feed(st->header); !fed) {
      FrameReadError e;
      e.kind = FrameReadError::Kind::rejected;
      e.reject = fed.error();
      st->done(Unexpected<FrameReadError>{e});
      return;
    }
    const uint32_t len = (uint32_t(st->header[0]) << 24) | (uint32_t(st->header[1]) << 16) |
                         (uint32_t(st->header[2]) << 8) | uint32_t(st->header[3]);
    st->body.resize(len);  // bounded: FrameReader refused len - 1 > max_payload_bytes
    asio::async_read(socket, asio::buffer(st->body), [st](boost::system::error_code ec2, size_t) {
      if (ec2) {
        st->done(Unexpected<FrameReadError>{io_error(ec2, true)});
        return;
      }
      (void)st->reader.feed(st->body);
      auto frame = st->reader.next();
      if (!frame) {
        FrameReadError e;
        e.kind = FrameReadError::Kind::truncated;
        st->done(Unexpected<FrameReadError>{e});
        return;
      }
      st->done(std::move(*frame));
    });
  });
}

std::vector<std::byte> frame_bytes(uint8_t type, std::span<const std::byte> payload) {
  std::vector<std::byte> out;
  out.reserve(wire::kFrameHeaderBytes + payload.size());
  wire::append_frame(out, type, payload);
  return out;
}

}  // namespace shoal::net

// A blocking connection's opening: hello, then (keyed) the server's handshake message and our proof.
#include "net/blocking_open.hpp"

namespace shoal::net {

Status open_on(BlockingConn& conn, const std::string& to, const OutgoingHello& hello,
               BlockingConn::Clock::time_point deadline) {
  ConnectionOpening opening = hello.open_to(to);
  if (auto r = conn.write_frame(wire::type_byte(wire::FrameType::hello), opening.hello, deadline); !r) return r;
  if (!opening.handshake) return Ok{};
  auto reply = conn.read_frame(kMaxHandshakeFrameBytes, deadline);
  if (!reply) return fail("no handshake reply from " + to + ": " + reply.error().message);
  if (reply->type != wire::type_byte(wire::FrameType::handshake)) {
    return fail("expected a handshake reply from " + to + ", got frame type " + std::to_string(reply->type));
  }
  auto finished = opening.handshake->finish(reply->payload);
  if (!finished) return fail("handshake with " + to + ": " + finished.error().detail);
  if (auto r = conn.write_frame(wire::type_byte(wire::FrameType::handshake), finished->proof, deadline); !r) return r;
  conn.set_keys(finished->keys);
  return Ok{};
}

Result<BlockingConn> open_blocking(const std::string& to, const OutgoingHello& hello,
                                   BlockingConn::Clock::time_point deadline, const std::atomic<bool>* cancel) {
  auto conn = BlockingConn::connect(to, deadline);
  if (!conn) return conn;
  conn->set_cancel(cancel);
  if (auto r = open_on(*conn, to, hello, deadline); !r) return fail(r.error().message);
  return conn;
}

}  // namespace shoal::net

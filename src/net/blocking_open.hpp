// Opening a connection with blocking calls, for the transfers that run on threads of their own
// (checkpoint streams): connect, send the hello, and in a keyed cluster complete the handshake
// (wire/stream_handshake.hpp), so that every frame and all bulk data after it are sealed both ways.
#pragma once

#include <atomic>
#include <string>

#include "base/result.hpp"
#include "net/blocking_conn.hpp"
#include "net/stream_hello.hpp"

namespace shoal::net {

// `to` is numeric "ip:port"; `cancel` (may be null) is polled while waiting. What follows is the
// caller's: its request frame first.
Result<BlockingConn> open_blocking(const std::string& to, const OutgoingHello& hello,
                                   BlockingConn::Clock::time_point deadline, const std::atomic<bool>* cancel);

// The handshake alone, on a connected `conn` (the hello included): for tests and for callers that
// connected themselves.
Status open_on(BlockingConn& conn, const std::string& to, const OutgoingHello& hello,
               BlockingConn::Clock::time_point deadline);

}  // namespace shoal::net

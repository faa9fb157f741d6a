// The link probe of the pre-flight check, both ends of one CHECK_LINK connection, with blocking calls on a
// thread of their own (never the agent's loop). After the connection's request frame (a CheckRequest of kind
// LINK: the sender's wishes, which the receiver caps), the sender times `pings` round trips of a small
// frame, then sends bulk frames for at most max_bytes and max_time, then an end frame that the receiver
// answers with the count of bulk bytes it read. Bandwidth is that count over the time from the first bulk
// byte to the answer, so bytes still in the socket buffers when the sender stops are waited for.
//
// Every frame is a request frame whose first byte says what it is (ping, bulk, end) and the answer a
// response frame; in a keyed cluster all of them are sealed like every other frame, so the figure includes
// the cipher's cost (about 1-2 GB/s per core, which matters only for links faster than that).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "base/result.hpp"
#include "net/blocking_conn.hpp"

namespace shoal::daemon::check {

// What either end accepts at most, whatever the other asks.
inline constexpr uint64_t kMaxLinkBytes = uint64_t{1} << 30;
inline constexpr std::chrono::milliseconds kMaxLinkTime{5000};
inline constexpr uint32_t kMaxPings = 64;
// The payload of one bulk frame (below the sealed frame's limit).
inline constexpr size_t kBulkFrameBytes = 256u << 10;

struct LinkProbeLimits {
  uint64_t max_bytes = 64u << 20;
  std::chrono::milliseconds max_time{500};
  uint32_t pings = 8;
};

// The same limits within the caps above (a figure of 0 becomes 1 where 0 would mean nothing to measure).
LinkProbeLimits capped(LinkProbeLimits wanted);

// What the sender measured.
struct LinkMeasure {
  uint64_t bytes = 0;       // bulk bytes the receiver confirmed
  uint64_t elapsed_us = 0;  // from the first bulk byte to the confirmation
  uint64_t rtt_us = 0;      // median round trip of the pings
  uint64_t rtt_min_us = 0;
};

// The sender's side, on a connection whose request frame has been written. `cancel` may be null.
Result<LinkMeasure> send_link_probe(net::BlockingConn& conn, const LinkProbeLimits& limits,
                                    const std::atomic<bool>* cancel);

// The receiver's side, after the request frame (its limits already capped). Ends when the sender's end frame
// is answered, or fails on anything else: a frame out of turn, more bytes or pings than agreed, or a read
// past the time allowed.
Status serve_link_probe(net::BlockingConn& conn, const LinkProbeLimits& limits);

}  // namespace shoal::daemon::check

// Outgoing TCP requests: connect, send the typed hello (and in a keyed cluster complete the handshake,
// after which both frames are sealed) and one request frame, read one response frame, all before a
// deadline. The answer (or nullopt on any failure) is reported exactly once.
//
// At most `max_in_flight` exchanges run at once; requests past that wait in a FIFO queue (up to
// `max_queued`) and start as exchanges finish, each still bound by its own deadline: a request that is
// still queued at its deadline fails then ("timed out while queued"). Local backpressure delays a
// request; it never fails one at once while the queue has room (a view round sends one request per
// member in one burst, and failing the excess made rounds of more than 128 members impossible).
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "net/stream_hello.hpp"

namespace shoal::net {

namespace asio = boost::asio;

// Why an exchange gave no response.
struct StreamFailure {
  std::string why;       // for people: refused, timed out, ...
  // The peer's host refused the connection itself (ECONNREFUSED: a TCP RST to our SYN, or an ICMP
  // unreachable): nothing listens on the port. Evidence that the process there is gone, unlike a
  // timeout or a reset after connecting (gossip's refusal rule uses it, src/gossip/README.md).
  bool refused = false;
};

// The default bounds: connections at once, and requests waiting for one. A view round at 25,000
// members queues one request per member; the queue holds a request's bytes, so its bound is the
// memory a burst may take, not a limit on the job's size in practice.
inline constexpr size_t kDefaultMaxInFlight = 128;
inline constexpr size_t kDefaultMaxQueued = 65536;

class StreamClient {
 public:
  using Clock = std::chrono::steady_clock;
  // The response payload, or nullopt with `failure` saying what failed.
  using Done = std::function<void(std::optional<std::vector<std::byte>> response, const StreamFailure& failure)>;

  explicit StreamClient(asio::io_context& io, size_t max_in_flight = kDefaultMaxInFlight,
                        size_t max_queued = kDefaultMaxQueued);
  // Requests still queued are dropped without their `done` (their owner is going away); exchanges in
  // flight finish as before.
  ~StreamClient();
  StreamClient(const StreamClient&) = delete;
  StreamClient& operator=(const StreamClient&) = delete;

  // `to` is numeric "ip:port". `hello` opens the connection (sealed for it when the cluster has a key). `done`
  // runs on the io_context, never from inside this call. Fails at once only for a malformed address or a
  // full queue.
  void request(const std::string& to, const OutgoingHello& hello, std::vector<std::byte> request,
               Clock::time_point deadline, size_t max_response_bytes, Done done);

  size_t in_flight() const;
  size_t queued() const;
  // Requests that had to wait for a free slot, since the start (a gauge of local backpressure).
  uint64_t ever_queued() const;

  struct State;  // shared with the exchanges, which outlive a call

 private:
  asio::io_context& io_;
  std::shared_ptr<State> state_;
};

}  // namespace shoal::net

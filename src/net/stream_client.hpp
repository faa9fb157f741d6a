// Outgoing TCP requests: connect, send the typed hello (and in a keyed cluster complete the handshake,
// after which both frames are sealed) and one request frame, read one response frame, all before a
// deadline. The answer (or nullopt on any failure) is reported exactly once.
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

class StreamClient {
 public:
  using Clock = std::chrono::steady_clock;
  // The response payload, or nullopt with `failure` saying what failed.
  using Done = std::function<void(std::optional<std::vector<std::byte>> response, const StreamFailure& failure)>;

  explicit StreamClient(asio::io_context& io, size_t max_in_flight = 128);

  // `to` is numeric "ip:port". `hello` opens the connection (sealed for it when the cluster has a key). `done`
  // runs on the io_context, never from inside this call.
  void request(const std::string& to, const OutgoingHello& hello, std::vector<std::byte> request,
               Clock::time_point deadline, size_t max_response_bytes, Done done);

  size_t in_flight() const { return *in_flight_; }

 private:
  asio::io_context& io_;
  size_t max_in_flight_;
  std::shared_ptr<size_t> in_flight_;
};

}  // namespace shoal::net

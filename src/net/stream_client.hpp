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

class StreamClient {
 public:
  using Clock = std::chrono::steady_clock;
  // The response payload, or nullopt with `why` saying what failed (refused, timed out, ...).
  using Done = std::function<void(std::optional<std::vector<std::byte>> response, const std::string& why)>;

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

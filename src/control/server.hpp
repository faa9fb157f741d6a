// The control socket: a Unix stream socket on which a client sends one request line and reads one
// JSON document back before the agent closes the connection. Requests are served from a
// ControlHandlers table; reads are bounded in size and time.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "base/result.hpp"
#include "base/warn_limiter.hpp"
#include "control/handlers.hpp"

namespace shoal::control {

namespace asio = boost::asio;

class ControlServer {
 public:
  ControlServer(asio::io_context& io, const ControlHandlers& handlers);
  ~ControlServer();  // closes and removes the socket file
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  // Binds `path` and starts accepting. Refuses when a live agent answers on it; removes a stale
  // socket file left by a process that died; never removes a file that is not a socket.
  // The socket is mode 0660, given to `group` when one is named.
  Status open(const std::string& path, std::optional<uint32_t> group = std::nullopt);
  // Stops accepting and removes the socket file (idempotent).
  void close();

  const std::string& path() const { return path_; }
  // How long a client may take to send its request line.
  std::chrono::milliseconds request_timeout{2000};
  // Connections served at once (long polls included: a connected trainer holds one). Past it a new
  // connection is told so in one error line and closed, counted and logged. Callers other than the agent's
  // user and root share at most three quarters of them, so that a flood by another user of the group still
  // leaves the operator its `shoal status`.
  size_t max_connections = 128;
  // Connections refused for the cap since start.
  uint64_t refused_connections() const { return refused_.load(std::memory_order_relaxed); }
  size_t open_connections() const { return slots_->open.load(std::memory_order_relaxed); }

  // Held by each connection served; gives its slot back when the connection ends.
  struct Slots {
    std::atomic<size_t> open{0};
    std::atomic<size_t> others{0};  // of those, callers that are neither the agent's user nor root
  };

 private:
  void accept_next();
  // Takes a slot for `caller` (false: the cap is reached and the connection was refused).
  bool admit(boost::asio::local::stream_protocol::socket& socket, const Caller& caller,
             std::shared_ptr<void>& slot);

  const ControlHandlers& handlers_;
  asio::local::stream_protocol::acceptor acceptor_;
  std::string path_;
  bool open_ = false;
  std::shared_ptr<Slots> slots_ = std::make_shared<Slots>();
  // Refused connections still being read from briefly (admit), at most kMaxDraining.
  static constexpr size_t kMaxDraining = 32;
  std::shared_ptr<std::atomic<size_t>> draining_ = std::make_shared<std::atomic<size_t>>(0);
  std::atomic<uint64_t> refused_{0};
  log::WarnLimiter warn_{std::chrono::seconds(10)};
};

}  // namespace shoal::control

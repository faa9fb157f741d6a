// The control socket: a Unix stream socket on which a client sends one request line and reads one
// JSON document back before the agent closes the connection. Requests are served from a
// ControlHandlers table; reads are bounded in size and time.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "base/result.hpp"
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

 private:
  void accept_next();

  asio::io_context& io_;
  const ControlHandlers& handlers_;
  asio::local::stream_protocol::acceptor acceptor_;
  std::string path_;
  bool open_ = false;
};

}  // namespace shoal::control

// A small HTTP/1.1 server (Boost.Beast) on the agent's loop for Prometheus: GET /metrics answers the
// text exposition; anything else gets 404 or 405. One request per connection, a few seconds to send
// it, and a cap on connections at once, so a scraper that misbehaves costs the agent nothing.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "base/result.hpp"
#include "net/host_port.hpp"

namespace shoal::daemon {

class MetricsServer {
 public:
  MetricsServer(boost::asio::io_context& io, std::function<std::string()> render);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Binds and starts accepting; a port in use or a host that does not resolve is an error naming it.
  Status open(const net::HostPort& bind);
  void close();
  uint16_t port() const { return port_; }
  uint64_t requests() const { return requests_; }

  static constexpr size_t kMaxConnections = 16;

 private:
  struct Session;
  void accept_next();

  boost::asio::io_context& io_;
  std::function<std::string()> render_;
  boost::asio::ip::tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  uint64_t requests_ = 0;
  std::shared_ptr<size_t> open_sessions_ = std::make_shared<size_t>(0);
};

}  // namespace shoal::daemon

// CoreDriver: what a sans-IO core needs from Asio, written once for the gossip core and the view keeper:
// the core's clock (time since the agent's origin), its one wake-up timer, outgoing TCP requests whose
// answers go back into the core, and a stop after which nothing reaches the core again. A runtime
// derives from it and supplies what is particular to its core: what a wake-up does, and where an answer
// goes. It decides nothing about any protocol.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gossip/types.hpp"
#include "net/stream_client.hpp"
#include "net/stream_hello.hpp"
#include "net/wake_timer.hpp"

namespace shoal::daemon {

class CoreDriver {
 public:
  using Clock = std::chrono::steady_clock;

  CoreDriver(const CoreDriver&) = delete;
  CoreDriver& operator=(const CoreDriver&) = delete;

  // The core's time: since the agent's origin.
  gossip::Time now() const { return std::chrono::duration_cast<gossip::Time>(Clock::now() - origin_); }

 protected:
  // `what` names the requests in debug logs ("view request", "tcp request").
  CoreDriver(boost::asio::io_context& io, Clock::time_point origin, std::string what);
  virtual ~CoreDriver() = default;

  // The core asked to be woken at `at` (nothing when nullopt).
  void wake_at(std::optional<gossip::Time> at);
  // Sends one request before `deadline` (core time); its answer, or nullopt when it failed, goes to
  // on_answer(token, ...) on the loop (a refused connection to on_refused), unless stop() came first.
  void request(const std::string& to, const net::OutgoingHello& hello, std::vector<std::byte> bytes,
               gossip::Time deadline, size_t max_response_bytes, uint64_t token);
  // Nothing reaches the core after this: timer, answers and the runtime's own inputs (see stopped()).
  void stop();
  bool stopped() const { return stopped_; }

  // The timer fired (never after stop()).
  virtual void on_wake() = 0;
  // The answer to request(token) (never after stop()).
  virtual void on_answer(uint64_t token, std::optional<std::span<const std::byte>> response) = 0;
  // The request's connection was refused by the peer's host (nothing listens there); by default a
  // failure like any other.
  virtual void on_refused(uint64_t token) { on_answer(token, std::nullopt); }

  boost::asio::io_context& io_;

 private:
  Clock::time_point origin_;
  std::string what_;
  net::StreamClient client_;
  net::WakeTimer timer_;
  bool stopped_ = false;
};

}  // namespace shoal::daemon

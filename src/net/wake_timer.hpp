// WakeTimer: the one timer a sans-IO core's runtime keeps. A core asks to be woken at a time after
// every call; the timer fires at the earliest time asked since it last fired, and a wait from an
// earlier arming is recognised as stale and dropped.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>

#include "gossip/types.hpp"

namespace shoal::net {

class WakeTimer {
 public:
  using Clock = std::chrono::steady_clock;

  // `origin` is time zero of the core's clock; `on_fire` runs on the io_context when the time comes.
  WakeTimer(boost::asio::io_context& io, Clock::time_point origin, std::function<void()> on_fire);

  // Wakes at `at` unless already armed for an earlier time (the core asks again after each tick).
  void arm(gossip::Time at);
  void cancel();

 private:
  boost::asio::steady_timer timer_;
  Clock::time_point origin_;
  std::function<void()> on_fire_;
  std::optional<gossip::Time> armed_at_;
  uint64_t seq_ = 0;
  bool cancelled_ = false;
};

}  // namespace shoal::net

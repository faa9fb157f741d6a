// NoticeWatcher: `shoal agent --drain-on aws|gcp|azure` polls the cloud's metadata service for a spot or
// preemption notice (drain_notice.hpp says what to ask and what the answer means) on the agent's loop, with
// Boost.Beast: one short HTTP exchange per poll, each bounded by a deadline and a cap on the response's size,
// and calls `on_notice` once when one comes.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "base/warn_limiter.hpp"
#include "ops/drain_notice.hpp"

namespace shoal::ops {

struct NoticeWatcherConfig {
  Cloud cloud = Cloud::aws;
  NoticeEndpoint endpoint;
  std::chrono::milliseconds poll_interval{1000};
  std::chrono::milliseconds exchange_deadline{2000};  // connect, send and read one answer
  size_t max_response_bytes = 64 * 1024;
};

class NoticeWatcher {
 public:
  NoticeWatcher(boost::asio::io_context& io, NoticeWatcherConfig cfg, std::function<void(const std::string& why)> on_notice);
  ~NoticeWatcher();
  NoticeWatcher(const NoticeWatcher&) = delete;
  NoticeWatcher& operator=(const NoticeWatcher&) = delete;

  void start();
  void stop();

 private:
  struct Exchange;
  void poll_later();
  void poll();
  void answered(bool token_request, unsigned status, std::string body, std::string error);

  boost::asio::io_context& io_;
  NoticeWatcherConfig cfg_;
  std::function<void(const std::string&)> on_notice_;
  boost::asio::steady_timer timer_;
  std::string aws_token_;
  bool stopped_ = false;
  log::WarnLimiter warn_{std::chrono::seconds(60)};
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace shoal::ops

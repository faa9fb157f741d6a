// CheckMember: a member's side of the pre-flight check. It serves the CHECK channel of the agent's TCP port
// (one request per connection from a coordinating member of the committed view: run the compute probe, or
// probe the link to another member of the view, and answer the figures) and the CHECK_LINK channel (the
// receiving end of another member's link probe). Probes run on threads of their own, never on the loop:
// at most one compute probe and one outgoing link probe at a time, at most kMaxReceiving incoming ones; a
// request beyond that is refused as busy. Only members of this agent's committed view are served, and a link
// probe goes only to a member of that view, at the address the view records (never one a request names).
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <thread>

#include "base/warn_limiter.hpp"
#include "check.pb.h"
#include "daemon/check/compute_probe.hpp"
#include "daemon/check/link_probe.hpp"
#include "membership/view.hpp"
#include "net/stream_hello.hpp"
#include "net/stream_listener.hpp"

namespace shoal::daemon::check {

class CheckMember {
 public:
  static constexpr size_t kMaxRequestBytes = 1024;
  static constexpr size_t kMaxReceiving = 4;
  // How long a CHECK request may wait for its answer: the longest link probe and a margin.
  static constexpr std::chrono::milliseconds kMaxWait = kMaxLinkTime + std::chrono::seconds(10);

  struct Hooks {
    std::function<const membership::View&()> view;  // the committed view (called on the loop)
    std::function<net::OutgoingHello()> link_hello;  // opens a CHECK_LINK connection
    ComputeProbe compute;                            // empty: this agent has none
    // A coordinator of the committed view says its check is over, naming the hosts it flagged (on the loop).
    std::function<void(const std::string& coordinator, const std::vector<std::string>& flagged)> on_done;
  };

  CheckMember(boost::asio::io_context& io, net::StreamListener& listener, Hooks hooks);
  ~CheckMember();
  CheckMember(const CheckMember&) = delete;
  CheckMember& operator=(const CheckMember&) = delete;

  // Cancels the probes in flight and joins their threads (the agent's finish).
  void stop();

  // Requests served, refused (not a member, busy, malformed), since start.
  uint64_t served() const { return served_; }
  uint64_t refused() const { return refused_; }

 private:
  std::function<void()> on_request(const net::StreamPeer& peer, std::span<const std::byte> bytes,
                                   net::StreamListener::Reply reply);
  void on_link(const net::StreamPeer& peer, std::span<const std::byte> bytes, net::BlockingConn conn);
  bool in_view(const net::StreamPeer& peer) const;
  // Runs `work` on a thread; its answer is handed to `reply` on the loop unless the connection ended first.
  void run(std::function<wire::CheckResponse()> work, std::shared_ptr<net::StreamListener::Reply> reply,
           bool* busy_flag);
  void spawn(std::function<void()> work);
  void reap();

  boost::asio::io_context& io_;
  Hooks hooks_;
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::mutex mu_;  // workers_
  std::list<Worker> workers_;
  std::atomic<bool> stopping_{false};
  std::atomic<size_t> receiving_{0};
  bool computing_ = false;  // on the loop
  bool sending_ = false;    // on the loop
  log::WarnLimiter warn_{std::chrono::seconds(10)};  // refusals, on the loop
  uint64_t served_ = 0;
  uint64_t refused_ = 0;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace shoal::daemon::check

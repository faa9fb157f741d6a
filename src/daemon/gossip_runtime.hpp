// The Asio runtime of the gossip core: turns gossip::Effects into UDP datagrams, TCP requests and
// one wake-up timer, and feeds received datagrams, TCP requests and timer expiries back into
// gossip::Swim. It decides nothing about the protocol.
#pragma once

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "base/warn_limiter.hpp"
#include "gossip/swim.hpp"
#include "net/stream_hello.hpp"
#include "daemon/core_driver.hpp"
#include "net/stream_listener.hpp"
#include "net/udp_datagram.hpp"

namespace shoal::daemon {

namespace asio = boost::asio;

class GossipRuntime : public CoreDriver {
 public:
  using EventObserver = std::function<void(const gossip::MemberEvent&)>;

  // `origin` is time zero for the core. The listener gets the gossip channels (push-pull, probe), and
  // counts the datagrams `seal` refuses (null: an open cluster).
  GossipRuntime(asio::io_context& io, asio::ip::udp::socket socket, gossip::Swim swim, Clock::time_point origin,
                net::StreamListener& listener, std::shared_ptr<net::ClusterSeal> seal = nullptr);
  GossipRuntime(const GossipRuntime&) = delete;
  GossipRuntime& operator=(const GossipRuntime&) = delete;

  // Starts receiving and joins through `seed_addrs` (numeric "ip:port"; empty: a new cluster).
  void start(const std::vector<std::string>& seed_addrs);
  // Seed addresses learned after start (gossip::Swim::add_seeds).
  void add_seeds(const std::vector<std::string>& seed_addrs);
  // Graceful leave: the core broadcasts it; keep the loop running briefly so that it goes out.
  void leave();
  // Stops receiving and ticking (after leave() and its grace period).
  void close();

  // Called for every member event, after it is logged.
  void add_observer(EventObserver observer) { observers_.push_back(std::move(observer)); }

  const gossip::Swim& swim() const { return swim_; }
  // Evidence from the data plane: a trainer's connection to `name` broke; the core probes it at once.
  void hint_failed(const std::string& name, uint64_t generation);
  // The members of a committed view (gossip::Swim::vouch).
  void vouch(const std::vector<gossip::Member>& members);

 private:
  void receive_next();
  void on_datagram(const net::Datagram& d);
  void on_wake() override;
  void on_answer(uint64_t token, std::optional<std::span<const std::byte>> response) override;
  void on_refused(uint64_t token) override;
  void perform(gossip::Effects& fx);
  void send_packet(gossip::SendPacket& p);
  void start_stream(gossip::StreamRequest& r);
  std::vector<std::byte> answer_stream(const net::StreamPeer& peer, std::span<const std::byte> request);
  void warn_limited(const std::string& key, const std::string& message);

  asio::ip::udp::socket socket_;
  gossip::Swim swim_;
  net::StreamListener& listener_;
  std::shared_ptr<net::ClusterSeal> seal_;
  std::array<std::byte, 65536> rx_buf_{};
  std::string own_addr_;  // the advertised address, canonical: a destination datagrams may name
  net::OutgoingHello hello_;        // our hello for anti-entropy (join, push-pull) requests
  net::OutgoingHello probe_hello_;  // our hello for fallback probes
  std::vector<EventObserver> observers_;
  log::WarnLimiter warn_{std::chrono::seconds(10)};
};

}  // namespace shoal::daemon

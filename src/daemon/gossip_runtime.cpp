// Performing the gossip core's effects with Asio, and routing inputs back into it.
#include "daemon/gossip_runtime.hpp"

#include "base/log.hpp"
#include "net/host_port.hpp"
#include "net/stream_hello.hpp"
#include "wire/packet.hpp"

namespace shoal::daemon {
namespace {

spdlog::logger& logger() { return log::get(log::Component::agent); }

}  // namespace

GossipRuntime::GossipRuntime(asio::io_context& io, asio::ip::udp::socket socket, gossip::Swim swim,
                             Clock::time_point origin, net::StreamListener& listener,
                             std::shared_ptr<net::ClusterSeal> seal)
    : CoreDriver(io, origin, "tcp request"),
      socket_(std::move(socket)),
      swim_(std::move(swim)),
      listener_(listener),
      seal_(seal ? std::move(seal) : std::make_shared<net::ClusterSeal>(std::nullopt)) {
  const auto& self = swim_.self();
  const wire::Envelope sender = wire::make_envelope(swim_.config().cluster_id, self.name, self.generation, self.addr);
  hello_ = net::OutgoingHello(net::encode_hello(sender, wire::Hello::PUSH_PULL), seal_);
  probe_hello_ = net::OutgoingHello(net::encode_hello(sender, wire::Hello::PROBE), seal_);
  const auto handler = [this](const net::StreamPeer& peer, std::span<const std::byte> request) {
    return answer_stream(peer, request);
  };
  listener.add_request_channel(wire::Hello::PUSH_PULL, swim_.config().max_stream_bytes, handler);
  listener.add_request_channel(wire::Hello::PROBE, swim_.config().max_stream_bytes, handler);
}

void GossipRuntime::start(const std::vector<std::string>& seed_addrs) {
  receive_next();
  gossip::Effects fx;
  swim_.start(seed_addrs, now(), fx);
  perform(fx);
}

void GossipRuntime::leave() {
  if (stopped()) return;
  gossip::Effects fx;
  swim_.leave(now(), fx);
  perform(fx);
}

void GossipRuntime::close() {
  stop();
  boost::system::error_code ignored;
  socket_.close(ignored);
}

void GossipRuntime::receive_next() {
  socket_.async_receive_from(asio::buffer(rx_buf_), rx_from_, [this](boost::system::error_code ec, size_t n) {
    if (ec == asio::error::operation_aborted || stopped()) return;
    if (!ec) {
      const std::string from = net::ip_port_text(rx_from_.address(), rx_from_.port());
      // The cluster key first: nothing unsealed (or replayed) reaches the core.
      auto opened = seal_->open_packet(std::span<const std::byte>(rx_buf_.data(), n));
      if (!opened) {
        listener_.count_rejected(opened.error().cause, "udp " + from, opened.error().detail);
      } else {
        gossip::Effects fx;
        swim_.on_packet(from, std::span<const std::byte>(*opened), now(), fx);
        perform(fx);
      }
    } else {
      // ICMP errors of earlier sends can surface here; the socket itself is fine.
      logger().debug("udp receive: {}", ec.message());
    }
    receive_next();
  });
}

std::vector<std::byte> GossipRuntime::answer_stream(const net::StreamPeer& peer, std::span<const std::byte> request) {
  if (stopped()) return {};
  gossip::Effects fx;
  // The core knows members by their advertised address, not by the connection's ephemeral port.
  auto response = swim_.on_stream_request(peer.hello.addr.empty() ? peer.remote : peer.hello.addr, request, now(), fx);
  perform(fx);
  return response;
}

void GossipRuntime::perform(gossip::Effects& fx) {
  if (stopped()) return;
  for (auto& p : fx.packets) send_packet(p);
  for (auto& r : fx.streams) start_stream(r);
  for (const auto& e : fx.events) {
    const auto& m = e.member;
    logger().info("member {} {} ({}, incarnation {}, generation {})", m.id.name, gossip::to_string(m.state), m.id.addr,
                  m.incarnation, m.id.generation);
    for (const auto& observer : observers_) observer(e);
  }
  wake_at(fx.wake_at);
  fx.clear();
}

void GossipRuntime::send_packet(gossip::SendPacket& p) {
  const auto to = net::parse_ip_port(p.to);
  if (!to) {
    warn_limited("bad address " + p.to, "gossip: cannot send to '" + p.to + "': not a numeric ip:port");
    return;
  }
  auto bytes = std::make_shared<std::vector<std::byte>>(seal_->seal_packet(p.bytes));
  socket_.async_send_to(asio::buffer(*bytes), asio::ip::udp::endpoint(to->ip, to->port),
                        [bytes, to = p.to](boost::system::error_code ec, size_t) {
                          if (ec && ec != asio::error::operation_aborted)
                            logger().debug("udp send to {}: {}", to, ec.message());
                        });
}

void GossipRuntime::start_stream(gossip::StreamRequest& r) {
  const net::OutgoingHello& hello = r.purpose == gossip::StreamPurpose::probe ? probe_hello_ : hello_;
  request(r.to, hello, std::move(r.bytes), r.deadline, swim_.config().max_stream_bytes, r.token);
}

void GossipRuntime::on_answer(uint64_t token, std::optional<std::span<const std::byte>> response) {
  gossip::Effects fx;
  swim_.on_stream_response(token, response, now(), fx);
  perform(fx);
}

void GossipRuntime::on_wake() {
  gossip::Effects fx;
  swim_.on_tick(now(), fx);
  perform(fx);
}

void GossipRuntime::warn_limited(const std::string& key, const std::string& message) {
  if (auto held = warn_.admit(key, Clock::now())) {
    logger().warn("{}{}", message, *held ? fmt::format(" ({} more since the last report)", *held) : std::string());
  }
}

}  // namespace shoal::daemon

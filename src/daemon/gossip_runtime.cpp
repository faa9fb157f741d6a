// Performing the gossip core's effects with Asio, and routing inputs back into it.
#include "daemon/gossip_runtime.hpp"

#include "base/log.hpp"
#include "net/host_port.hpp"
#include "net/stream_hello.hpp"
#include "net/udp_datagram.hpp"
#include "wire/packet.hpp"

namespace shoal::daemon {
namespace {

constexpr int kDatagramsPerTurn = 64;

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
  own_addr_ = net::canonical_ip_port(self.addr);
  if (auto ok = net::report_destinations(socket_); !ok) log::agent().warn("udp: {}", ok.error().message);
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

void GossipRuntime::add_seeds(const std::vector<std::string>& seed_addrs) {
  if (stopped()) return;
  gossip::Effects fx;
  swim_.add_seeds(seed_addrs, now(), fx);
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
  // Waits for readability, then takes datagrams with recvmsg (udp_datagram.hpp): the cluster key needs
  // each one's destination address, which async_receive_from does not report.
  socket_.async_wait(asio::ip::udp::socket::wait_read, [this](boost::system::error_code ec) {
    if (ec == asio::error::operation_aborted || stopped()) return;
    if (ec) {
      log::agent().debug("udp wait: {}", ec.message());
    } else {
      // A bounded batch per turn, so timers and TCP keep their share of the loop under a flood.
      for (int i = 0; i < kDatagramsPerTurn && !stopped(); ++i) {
        auto got = net::receive_datagram(socket_, rx_buf_);
        if (!got) {
          // ICMP errors of earlier sends can surface here; the socket itself is fine.
          log::agent().debug("udp receive: {}", got.error().message);
          continue;
        }
        if (!*got) break;
        on_datagram(**got);
      }
    }
    if (!stopped()) receive_next();
  });
}

void GossipRuntime::on_datagram(const net::Datagram& d) {
  const std::string from = net::ip_port_text(d.from.address(), d.from.port());
  // The cluster key first: nothing unsealed, replayed or meant for another host reaches the core.
  const std::array<std::string_view, 2> own = {own_addr_, d.to};
  auto opened = seal_->open_packet(std::span<const std::byte>(rx_buf_.data(), d.bytes), own);
  if (!opened) {
    listener_.count_rejected(opened.error().cause, "udp " + from, opened.error().detail);
    return;
  }
  gossip::Effects fx;
  swim_.on_packet(from, std::span<const std::byte>(*opened), now(), fx);
  perform(fx);
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
    log::agent().info("member {} {} ({}, incarnation {}, generation {})", m.id.name, gossip::to_string(m.state),
                      m.id.addr, m.incarnation, m.id.generation);
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
  auto bytes =
      std::make_shared<std::vector<std::byte>>(seal_->seal_packet(p.bytes, net::canonical_ip_port(to->ip, to->port)));
  socket_.async_send_to(asio::buffer(*bytes), asio::ip::udp::endpoint(to->ip, to->port),
                        [bytes, to = p.to](boost::system::error_code ec, size_t) {
                          if (ec && ec != asio::error::operation_aborted)
                            log::agent().debug("udp send to {}: {}", to, ec.message());
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

void GossipRuntime::on_refused(uint64_t token) {
  gossip::Effects fx;
  swim_.on_stream_refused(token, now(), fx);
  perform(fx);
}

void GossipRuntime::hint_failed(const std::string& name, uint64_t generation) {
  if (stopped()) return;
  gossip::Effects fx;
  swim_.hint_failed(name, generation, now(), fx);
  perform(fx);
}

void GossipRuntime::vouch(const std::vector<gossip::Member>& members) {
  if (stopped()) return;
  gossip::Effects fx;
  swim_.vouch(members, now(), fx);
  perform(fx);
}

void GossipRuntime::on_wake() {
  gossip::Effects fx;
  swim_.on_tick(now(), fx);
  perform(fx);
}

void GossipRuntime::warn_limited(const std::string& key, const std::string& message) {
  if (auto held = warn_.admit(key, Clock::now())) {
    log::agent().warn("{}{}", message, *held ? fmt::format(" ({} more since the last report)", *held) : std::string());
  }
}

}  // namespace shoal::daemon

// TCP first (SO_REUSEADDR, so a restart is not blocked by TIME_WAIT), then UDP on the same number
// (no SO_REUSEADDR: two agents must never share a UDP port). Both close-on-exec (net/cloexec.hpp).
#include "net/port_binding.hpp"

#include "net/cloexec.hpp"
#include "net/host_port.hpp"

namespace shoal::net {

Result<BoundPort> bind_shared_port(asio::io_context& io, const asio::ip::address& ip, uint16_t port, int attempts) {
  using tcp = asio::ip::tcp;
  using udp = asio::ip::udp;
  std::string last_error;
  for (int attempt = 0; attempt < (port == 0 ? attempts : 1); ++attempt) {
    boost::system::error_code ec;
    tcp::acceptor acceptor(io);
    const tcp::endpoint tcp_ep(ip, port);
    open_cloexec(acceptor, tcp_ep.protocol(), ec);
    if (ec) return fail("cannot open a TCP socket: " + ec.message());
    acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
    acceptor.bind(tcp_ep, ec);
    if (ec) {
      if (ec == asio::error::address_in_use) return fail("port " + ip_port_text(ip, port) + " is already in use (TCP)");
      return fail("cannot bind TCP " + ip_port_text(ip, port) + ": " + ec.message());
    }
    acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return fail("cannot listen on TCP " + ip_port_text(ip, port) + ": " + ec.message());
    const uint16_t chosen = acceptor.local_endpoint().port();

    udp::socket socket(io);
    const udp::endpoint udp_ep(ip, chosen);
    open_cloexec(socket, udp_ep.protocol(), ec);
    if (ec) return fail("cannot open a UDP socket: " + ec.message());
    socket.bind(udp_ep, ec);
    if (!ec) {
      boost::system::error_code ignored;
      socket.set_option(udp::socket::receive_buffer_size(kGossipReceiveBufferBytes), ignored);
      udp::socket::receive_buffer_size granted;
      socket.get_option(granted, ignored);
      return BoundPort{std::move(acceptor), std::move(socket), chosen, granted.value()};
    }
    if (ec != asio::error::address_in_use)
      return fail("cannot bind UDP " + ip_port_text(ip, chosen) + ": " + ec.message());
    last_error = "port " + ip_port_text(ip, chosen) + " is already in use (UDP)";
  }
  if (port == 0)
    return fail("no port free for both TCP and UDP after " + std::to_string(attempts) + " tries; last: " + last_error);
  return fail(last_error);
}

}  // namespace shoal::net

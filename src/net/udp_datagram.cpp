// recvmsg with the destination's control message, for the gossip runtime's socket.
#include "net/udp_datagram.hpp"

#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "net/host_port.hpp"

namespace shoal::net {

namespace asio = boost::asio;

Status report_destinations(asio::ip::udp::socket& socket) {
  const int one = 1;
  const int fd = socket.native_handle();
  const bool v6 = socket.local_endpoint().address().is_v6();
  // A dual-stack IPv6 socket reports IPv4 datagrams through IPV6_PKTINFO, as v4-mapped addresses.
  const int rc = v6 ? ::setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof one)
                    : ::setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof one);
  if (rc != 0) return fail(std::string("cannot ask for datagram destinations: ") + std::strerror(errno));
  return Ok{};
}

Result<std::optional<Datagram>> receive_datagram(asio::ip::udp::socket& socket, std::span<std::byte> buffer) {
  sockaddr_storage from{};
  iovec iov{buffer.data(), buffer.size()};
  alignas(cmsghdr) unsigned char control[CMSG_SPACE(sizeof(in6_pktinfo)) + CMSG_SPACE(sizeof(in_pktinfo))];
  msghdr msg{};
  msg.msg_name = &from;
  msg.msg_namelen = sizeof from;
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = ::recvmsg(socket.native_handle(), &msg, MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return std::optional<Datagram>();
    return fail(std::string("recvmsg: ") + std::strerror(errno));
  }
  Datagram d;
  d.bytes = static_cast<size_t>(n);
  uint16_t local_port = 0;
  {
    boost::system::error_code ec;
    const auto local = socket.local_endpoint(ec);
    if (!ec) local_port = local.port();
  }
  if (from.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&from);
    asio::ip::address_v4::bytes_type b;
    std::memcpy(b.data(), &a->sin_addr, b.size());
    d.from = asio::ip::udp::endpoint(asio::ip::address_v4(b), ntohs(a->sin_port));
  } else if (from.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&from);
    asio::ip::address_v6::bytes_type b;
    std::memcpy(b.data(), &a->sin6_addr, b.size());
    d.from = asio::ip::udp::endpoint(asio::ip::address_v6(b, a->sin6_scope_id), ntohs(a->sin6_port));
  }
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
      in_pktinfo info;
      std::memcpy(&info, CMSG_DATA(c), sizeof info);
      asio::ip::address_v4::bytes_type b;
      std::memcpy(b.data(), &info.ipi_addr, b.size());  // the header's destination, not the interface's
      d.to = canonical_ip_port(asio::ip::address_v4(b), local_port);
    } else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
      in6_pktinfo info;
      std::memcpy(&info, CMSG_DATA(c), sizeof info);
      asio::ip::address_v6::bytes_type b;
      std::memcpy(b.data(), &info.ipi6_addr, b.size());
      d.to = canonical_ip_port(asio::ip::address_v6(b), local_port);
    }
  }
  return std::optional<Datagram>(std::move(d));
}

}  // namespace shoal::net

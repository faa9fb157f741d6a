// Identifies and shuts down the sockets of a Gloo context's pairs (see pair_sockets.hpp for why).
#include "comm_wrap/gloo/pair_sockets.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/address.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "base/log.hpp"
#include "base/tcp_backoff.hpp"
#include "base/tcp_keepalive.hpp"
#include "comm_wrap/gloo/gloo_assumptions.hpp"
#include "comm_wrap/gloo/store_adapter.hpp"

namespace shoal::comm {

namespace {

struct OpenSocket {
  ino_t inode = 0;
  sockaddr_storage local{};
  sockaddr_storage peer{};
};

bool same_endpoint(const sockaddr_storage& a, const sockaddr_storage& b) {
  if (a.ss_family != b.ss_family) return false;
  if (a.ss_family == AF_INET) {
    const auto& x = reinterpret_cast<const sockaddr_in&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in&>(b);
    return x.sin_port == y.sin_port && x.sin_addr.s_addr == y.sin_addr.s_addr;
  }
  if (a.ss_family == AF_INET6) {
    const auto& x = reinterpret_cast<const sockaddr_in6&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in6&>(b);
    return x.sin6_port == y.sin6_port && std::memcmp(&x.sin6_addr, &y.sin6_addr, sizeof(in6_addr)) == 0;
  }
  return false;
}

// The inode of a socket descriptor, read from its /proc link ("socket:[12345]") without touching the
// descriptor, or nullopt when it is not a socket.
std::optional<ino_t> socket_inode(const char* fd_name) {
  const std::string link = std::string("/proc/self/fd/") + fd_name;
  char target[64];
  const ssize_t n = ::readlink(link.c_str(), target, sizeof(target) - 1);
  if (n <= 0) return std::nullopt;
  target[n] = '\0';
  constexpr std::string_view kPrefix = "socket:[";
  if (std::string_view(target, size_t(n)).substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  return static_cast<ino_t>(std::strtoull(target + kPrefix.size(), nullptr, 10));
}

// Calls `visit(fd, inode)` with a private duplicate of every open socket descriptor. Working on a
// duplicate means the socket checked is the socket acted on, even if the original descriptor number
// is closed and reused meanwhile.
template <class Visit>
void for_each_socket(Visit&& visit) {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return;
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    const auto inode = socket_inode(entry->d_name);
    if (!inode) continue;
    const int dup = ::fcntl(std::atoi(entry->d_name), F_DUPFD_CLOEXEC, 0);
    if (dup < 0) continue;
    struct stat st {};
    if (::fstat(dup, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_ino == *inode) visit(dup, *inode);
    ::close(dup);
  }
  ::closedir(dir);
}

std::vector<OpenSocket> connected_sockets() {
  std::vector<OpenSocket> out;
  for_each_socket([&](int fd, ino_t inode) {
    OpenSocket s{inode, {}, {}};
    socklen_t len = sizeof(s.local);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&s.local), &len) != 0) return;
    if (s.local.ss_family != AF_INET && s.local.ss_family != AF_INET6) return;
    len = sizeof(s.peer);
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&s.peer), &len) != 0) return;  // listening or unconnected
    out.push_back(s);
  });
  return out;
}

// The address peer `j` published for `rank`: Gloo's connectFullMesh stores, under the key "<j>", one
// fixed-size address per other rank in rank order, skipping j itself.
std::optional<sockaddr_storage> published_peer_address(const GlooStoreAdapter& adapter, int rank, int size, int j) {
  const auto blob = adapter.fetched(std::to_string(j));
  if (!blob || size < 2 || blob->size() % size_t(size - 1) != 0) return std::nullopt;
  const size_t each = blob->size() / size_t(size - 1);
  const size_t slot = size_t(rank > j ? rank - 1 : rank);
  try {
    const gloo::transport::tcp::Address addr(
        std::vector<char>(blob->begin() + long(slot * each), blob->begin() + long((slot + 1) * each)));
    return addr.getSockaddr();
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

GlooPairSockets GlooPairSockets::find(const gloo::rendezvous::Context& context, const GlooStoreAdapter& adapter) {
  auto& logger = log::get(log::Component::comm);
  auto& ctx = const_cast<gloo::rendezvous::Context&>(context);  // getPair is not const in Gloo
  const auto sockets = connected_sockets();
  GlooPairSockets result;
  for (int j = 0; j < context.size; ++j) {
    if (j == context.rank) continue;
    auto& pair = ctx.getPair(j);
    const auto* self = pair ? dynamic_cast<const gloo::transport::tcp::Address*>(&pair->address()) : nullptr;
    if (self == nullptr) continue;
    const auto peer = published_peer_address(adapter, context.rank, context.size, j);
    if (peer) result.peers_.emplace_back(j, *peer);
    // The connecting side: the remote end is the peer's published address (an exact 4-tuple). The
    // listening side: the local end is a port bound for this pair alone, so the local address suffices.
    std::vector<ino_t> exact, by_local;
    for (const auto& s : sockets) {
      if (!same_endpoint(s.local, self->getSockaddr())) continue;
      by_local.push_back(s.inode);
      if (peer && same_endpoint(s.peer, *peer)) exact.push_back(s.inode);
    }
    // Without an exact match every socket on the pair's own port belongs to this pair: the port was
    // bound for it alone. More than one (seen once in CI under load, most likely a connection the
    // peer gave up on and retried, not yet closed) are all kept, so the live one is tuned and shut too.
    const auto& chosen = exact.empty() ? by_local : exact;
    // Where Gloo's error messages may name this pair's peer: its published address (the connecting side)
    // and the remote end of an accepted socket (the listening side: Gloo takes the peer's address from
    // the accepted connection, an ephemeral port).
    for (const auto& s : sockets) {
      if (std::find(chosen.begin(), chosen.end(), s.inode) != chosen.end()) result.peers_.emplace_back(j, s.peer);
    }
    if (chosen.empty()) {
      logger.warn("gloo rank {}: no socket matches the pair to rank {}; abort will rely on the op timeout for it",
                  context.rank, j);
    } else if (chosen.size() > 1) {
      logger.info("gloo rank {}: {} sockets share the pair to rank {}'s own address; all are tracked", context.rank,
                  chosen.size(), j);
    }
    result.inodes_.insert(result.inodes_.end(), chosen.begin(), chosen.end());
  }
  return result;
}

std::optional<sockaddr_storage> endpoint_in_brackets(std::string_view text) {
  if (text.empty() || text[0] != '[') return std::nullopt;
  const size_t close = text.find(']');
  if (close == std::string_view::npos || text.substr(close, 2) != "]:") return std::nullopt;
  const size_t open = 0;
  const std::string ip(text.substr(open + 1, close - open - 1));
  size_t end = close + 2;
  unsigned port = 0;
  while (end < text.size() && text[end] >= '0' && text[end] <= '9' && port <= 65535) {
    port = port * 10 + unsigned(text[end++] - '0');
  }
  if (end == close + 2 || port == 0 || port > 65535) return std::nullopt;
  sockaddr_storage out{};
  auto* v4 = reinterpret_cast<sockaddr_in*>(&out);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&out);
  if (::inet_pton(AF_INET, ip.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
  } else if (::inet_pton(AF_INET6, ip.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
  } else {
    return std::nullopt;
  }
  return out;
}

std::optional<int> GlooPairSockets::rank_named_in(std::string_view message) const {
  // Gloo's own messages start with "[file:line] ": the pair's peer is the first "[ip]:port" that parses.
  // Debian's Gloo prints the port without converting it from network byte order (seen: 32176 for a pair
  // listening on 45181), so a port matches as written or byte-swapped; the written one wins a tie.
  for (size_t open = message.find('['); open != std::string_view::npos; open = message.find('[', open + 1)) {
    auto named = endpoint_in_brackets(message.substr(open));
    if (!named) continue;
    for (const bool swapped : {false, true}) {
      if (swapped) {
        auto& port = named->ss_family == AF_INET ? reinterpret_cast<sockaddr_in&>(*named).sin_port
                                                 : reinterpret_cast<sockaddr_in6&>(*named).sin6_port;
        port = static_cast<in_port_t>((port >> 8) | (port << 8));
      }
      for (const auto& [rank, addr] : peers_) {
        if (same_endpoint(addr, *named)) return rank;
      }
    }
    return std::nullopt;
  }
  return std::nullopt;
}

size_t GlooPairSockets::shutdown_all() const {
  size_t count = 0;
  for_each_socket([&](int fd, ino_t inode) {
    for (const ino_t mine : inodes_) {
      if (mine == inode && ::shutdown(fd, SHUT_RDWR) == 0) ++count;
    }
  });
  return count;
}

size_t GlooPairSockets::tune_for_loss(bool* unsupported) const {
  size_t count = 0;
  for_each_socket([&](int fd, ino_t inode) {
    for (const ino_t mine : inodes_) {
      if (mine != inode) continue;
      net::detect_dead_peers(fd);
      const auto r = net::cap_retransmission_backoff(fd);
      if (r == net::BackoffCap::applied) ++count;
      if (r == net::BackoffCap::unsupported && unsupported != nullptr) *unsupported = true;
    }
  });
  return count;
}

}  // namespace shoal::comm

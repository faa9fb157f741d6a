// GlooPairSockets: the TCP sockets behind a Gloo context's pairs, found once after connectFullMesh,
// so that abort() can shut them down from any thread.
//
// Why: with Debian's Gloo (0.0~git20220518) neither transport::Pair::close() nor
// Context::closeConnections() wakes a collective blocked on that context: close() only moves the pair
// to CLOSED and closes its descriptor, without signalling the pending buffers, so the waiter sleeps
// until the operation's timeout (measured: the full timeout, 5 s of 5 s). What does wake it is the
// device loop seeing end-of-file on the socket: shutdown(SHUT_RDWR) of our own end makes the loop read
// 0 bytes, signal "Connection closed by peer" to every pending buffer of that pair, and the peer sees
// end-of-file too. The pair's descriptor itself is private (and tcp/pair.h does not compile against
// Debian's headers, which lack gloo/common/memory.h), so the sockets are identified from outside by
// their addresses: a pair's own address is the local address of its connected socket, and the peer's
// published address is the remote end of the connecting side.
#pragma once

#include <sys/types.h>

#include <sys/socket.h>

#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace gloo::rendezvous {
class Context;
}

namespace shoal::comm {

class GlooStoreAdapter;

// The endpoint written "[ip]:port" at the start of `text` (IPv4 or IPv6), as Gloo's tcp::Address::str()
// writes it; nullopt when `text` does not start with one.
std::optional<sockaddr_storage> endpoint_in_brackets(std::string_view text);

class GlooPairSockets {
 public:
  GlooPairSockets() = default;

  // `adapter` is the store `context` connected through (it remembers the peers' published addresses).
  static GlooPairSockets find(const gloo::rendezvous::Context& context, const GlooStoreAdapter& adapter);

  // How many sockets were identified (one per pair, more where a pair's port holds several).
  size_t found() const { return inodes_.size(); }
  // Shuts down every identified socket still open; returns how many it shut down. Thread-safe.
  size_t shutdown_all() const;
  // Caps TCP's retransmission backoff on every identified socket (base/tcp_backoff.hpp): a lost segment
  // of a collective then waits about a second, not minutes. Also turns on keepalive probes
  // (base/tcp_keepalive.hpp), so that a peer whose socket is gone is noticed within seconds even
  // when its last RST was lost. Returns how many took the cap; `unsupported` is set when the kernel
  // lacks the option.
  size_t tune_for_loss(bool* unsupported) const;
  // The rank whose pair a Gloo error message names: Gloo's transport says "Connection closed by peer
  // [ip]:port" or "Read error [ip]:port: ...", with the peer's published pair address (connecting side)
  // or the remote end of the accepted socket (listening side). nullopt when it names no pair of ours.
  std::optional<int> rank_named_in(std::string_view gloo_message) const;

 private:
  std::vector<ino_t> inodes_;  // the sockets' inode numbers: exact, and never confused with a reused fd
  // Each peer rank's published pair address and its sockets' remote ends.
  std::vector<std::pair<int, sockaddr_storage>> peers_;
};

}  // namespace shoal::comm

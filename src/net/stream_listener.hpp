// The TCP side of the agent's port: accepts connections, reads the typed hello (in a keyed cluster:
// completes the handshake of wire/stream_handshake.hpp, after which every frame is sealed both ways), and
// hands the connection's request to the handler registered for its channel (gossip push-pull and probe today;
// view agreement, the rendezvous store and checkpoint streams register theirs later). Every read is
// bounded in size and time; malformed input is counted by cause and dropped.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/warn_limiter.hpp"
#include "net/blocking_conn.hpp"
#include "net/connection_budget.hpp"
#include "net/stream_hello.hpp"
#include "wire/reject.hpp"

namespace shoal::net {

namespace asio = boost::asio;

struct StreamPeer {
  PeerHello hello;
  std::string remote;  // "ip:port" of the connection itself (an ephemeral port)
};

class StreamListener {
 public:
  // One request frame in, one response frame out; an empty response closes without answering.
  using RequestHandler = std::function<std::vector<std::byte>(const StreamPeer&, std::span<const std::byte> request)>;
  // For requests answered later (a rendezvous wait): the handler keeps `reply` and calls it once, on the
  // loop's thread, with the response (empty: close without answering). It returns what to run when the
  // connection ends before the reply (the peer closed, or max_wait passed) so it can forget the request.
  using Reply = std::function<void(std::vector<std::byte> response)>;
  using AsyncRequestHandler =
      std::function<std::function<void()>(const StreamPeer&, std::span<const std::byte> request, Reply reply)>;

  // For bulk transfers (checkpoint streams): after the request frame the handler owns the connection
  // as a blocking one (keyed: with its keys, so it goes on sealing both ways), and moves the bytes on a
  // thread of its own so that gigabytes never pass through the agent's loop.
  using TakeoverHandler = std::function<void(const StreamPeer&, std::span<const std::byte> request, BlockingConn conn)>;

  struct Limits {
    // From accept to a finished hello (keyed: the handshake's proof). Short, because an unauthenticated
    // connection holds a slot of the unauthenticated budget; a member needs one or two round trips.
    std::chrono::milliseconds hello_timeout{1000};
    // From authentication to the reply of a request/response exchange (request and reply together).
    std::chrono::milliseconds connection_timeout{5000};
    ConnectionCaps caps;  // net/connection_budget.hpp: unauthenticated, authenticated and waiting apart
  };

  StreamListener(asio::ip::tcp::acceptor acceptor, std::string cluster_id, Limits limits);
  ~StreamListener();
  StreamListener(const StreamListener&) = delete;
  StreamListener& operator=(const StreamListener&) = delete;

  // Registers the handler of a request/response channel; requests above max_request_bytes are refused.
  void add_request_channel(wire::Hello::Channel channel, size_t max_request_bytes, RequestHandler handler);
  // Registers a channel whose requests may wait up to `max_wait` for their answer.
  void add_async_request_channel(wire::Hello::Channel channel, size_t max_request_bytes,
                                 std::chrono::milliseconds max_wait, AsyncRequestHandler handler);

  // Registers a channel whose connections the handler takes over after the request frame.
  void add_takeover_channel(wire::Hello::Channel channel, size_t max_request_bytes, TakeoverHandler handler);

  // The cluster key: every connection's handshake must complete under it before its request is read,
  // and its hello must have been sealed for this host: for the address the connection arrived at, or
  // for `own_addr` (the address this host advertises, which differs behind NAT). Before start(); null
  // (the default) is an open cluster, where sealed hellos are refused.
  void set_seal(std::shared_ptr<ClusterSeal> seal, std::string own_addr = {});

  void start();
  void close();

  // Refusals found by the agent's shell, not the gossip core: bad hellos, oversized or truncated frames,
  // unknown channels, timeouts, and datagrams the cluster key refused (counted through count_rejected).
  const wire::RejectCounters& rejected() const;
  // The connections held now, by budget (unauthenticated, authenticated, waiting).
  const ConnectionBudget& budget() const;
  // Counts and logs (rate limited per cause) one refused input from `remote`.
  void count_rejected(wire::RejectCause cause, const std::string& remote, const std::string& detail);

  // State shared with live connections, which may outlive a close().
  struct Shared;

 private:
  void accept_next();

  asio::ip::tcp::acceptor acceptor_;
  asio::steady_timer retry_timer_;  // after an accept error (out of file descriptors), pause before retrying
  std::shared_ptr<Shared> shared_;
};

}  // namespace shoal::net

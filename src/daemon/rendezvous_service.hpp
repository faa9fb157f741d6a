// RendezvousService: the agent's side of the epoch-scoped rendezvous store. It serves the RENDEZVOUS
// channel of the agent's TCP port from a comm::RendezvousTable, answers parked waits when their keys
// arrive, their deadline passes, or a committed view supersedes their epoch. Which agent a rank asks
// for epoch e is the rank's business (see rendezvous_client.hpp): any agent serves any current epoch.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>

#include "comm_wrap/stores/rendezvous_table.hpp"
#include "net/stream_listener.hpp"
#include "net/wake_timer.hpp"

namespace shoal::daemon {

class RendezvousService {
 public:
  // Requests carry at most one value; this bounds a request's bytes on the wire.
  static constexpr size_t kMaxRequestBytes = (1 << 20) + 64 * 1024;

  RendezvousService(boost::asio::io_context& io, net::StreamListener& listener,
                    std::chrono::steady_clock::time_point origin, comm::RendezvousTable::Limits limits = {});
  ~RendezvousService();
  RendezvousService(const RendezvousService&) = delete;
  RendezvousService& operator=(const RendezvousService&) = delete;

  // A view of `epoch` was committed here, of `world_size` ranks (the table's bounds follow it; 0: unchanged).
  void on_committed(uint64_t epoch, uint64_t world_size = 0);

  const comm::RendezvousTable& table() const { return table_; }

 private:
  std::function<void()> on_request(const net::StreamPeer& peer, std::span<const std::byte> bytes,
                                   net::StreamListener::Reply reply);
  void deliver(std::vector<comm::RendezvousTable::Reply>& replies);
  void rearm();
  comm::RendezvousTable::Time now() const;

  std::chrono::steady_clock::time_point origin_;
  comm::RendezvousTable table_;
  std::map<comm::RendezvousTable::Waiter, net::StreamListener::Reply> replies_;
  comm::RendezvousTable::Waiter next_waiter_ = 1;
  net::WakeTimer timer_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace shoal::daemon

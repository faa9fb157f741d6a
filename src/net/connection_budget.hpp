// Who may hold the agent's TCP port, and how many: connections that have not yet authenticated (no
// finished hello/handshake) are counted per source address and in total and capped apart from the
// authenticated ones, so a flood of idle connections from one address -- also an address that members
// share, a NAT or loopback -- can never take the slots a member needs. A plain class: the listener asks,
// it answers; no sockets, no clock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace shoal::net {

struct ConnectionCaps {
  // Connections still in their hello or handshake, from all sources and from any one address. A new
  // connection beyond either cap is still admitted: it evicts the oldest unauthenticated connection
  // (of its own address, or of the address holding the most), so the newest arrival -- a member's,
  // which completes its handshake in a round trip -- gets its chance while a flooder's idle
  // connections only replace each other.
  size_t unauthenticated_total = 64;
  size_t unauthenticated_per_source = 16;
  // Authenticated connections in a short request/response exchange (or a checkpoint request being read).
  size_t authenticated = 128;
  // Authenticated requests parked for a late answer (rendezvous waits of up to ~605 s): a budget of
  // their own, so long waits can never take the slots of short exchanges.
  size_t waiting = 512;
};

class ConnectionBudget {
 public:
  using Ticket = uint64_t;  // increasing: a smaller ticket is an older connection

  struct Admission {
    Ticket ticket;
    std::optional<Ticket> evict;  // an older unauthenticated connection to close now
  };

  explicit ConnectionBudget(ConnectionCaps caps) : caps_(caps) {}

  // A connection accepted from `source` (an address without port); always admitted, perhaps at the
  // cost of an older unauthenticated one.
  Admission admit(const std::string& source);
  // The connection finished its hello/handshake: it leaves the unauthenticated budget. False (and the
  // connection is forgotten) when the authenticated cap is full.
  bool authenticate(Ticket t);
  // An authenticated connection now waits for a late answer: it moves to the waiting budget. False
  // (and the connection is forgotten) when that cap is full.
  bool park(Ticket t);
  // The connection ended (or left the listener, as a taken-over transfer): forget it, whatever its state.
  void release(Ticket t);

  size_t unauthenticated() const { return unauthenticated_.size(); }
  size_t unauthenticated_from(const std::string& source) const;
  size_t authenticated() const { return authenticated_; }
  size_t waiting() const { return waiting_; }
  const ConnectionCaps& caps() const { return caps_; }

 private:
  enum class State : uint8_t { authenticated, waiting };
  std::optional<Ticket> oldest_from(const std::string& source) const;
  void forget_unauthenticated(Ticket t);

  ConnectionCaps caps_;
  Ticket next_ = 1;
  std::map<Ticket, std::string> unauthenticated_;  // by age, with its source
  std::map<std::string, size_t> per_source_;       // unauthenticated connections of each source
  std::map<Ticket, State> admitted_;               // authenticated ones
  size_t authenticated_ = 0;
  size_t waiting_ = 0;
};

}  // namespace shoal::net

// Who may hold the agent's TCP port, and how many: connections that have not yet authenticated (no
// finished hello/handshake) are counted per source address and in total and capped apart from the
// authenticated ones, so a flood of idle connections from one address -- also an address that members
// share, a NAT or loopback -- can never take the slots a member needs. A plain class: the listener asks,
// it answers; no sockets, no clock.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace shoal::net {

struct ConnectionCaps {
  // Connections still in their hello or handshake, from all sources and from any one address. A new
  // connection beyond either cap is still admitted: it evicts the oldest unauthenticated connection
  // (of its own address, or of the address holding the most), so the newest arrival -- a member's,
  // which completes its handshake in a round trip -- gets its chance while a flooder's idle
  // connections only replace each other.
  //
  // Which one pays: the oldest that has sent nothing yet (an idle connection: what a flooder holds). One
  // that has sent its opening (its hello, or the first message of its handshake) is in a member's
  // handshake, waiting for the agent's CPU or for its own second message: it is evicted only once it is
  // older than `eviction_grace`, and while every candidate is such a young one the newcomer is refused
  // instead (closed at once; its client retries). Without this, 140 agents joining through one seed on
  // loopback (one address) evicted each other's handshakes faster than a starved seed finished any.
  size_t unauthenticated_total = 64;
  size_t unauthenticated_per_source = 16;
  std::chrono::milliseconds eviction_grace{500};
  // Authenticated connections in a short request/response exchange (or a checkpoint request being read).
  size_t authenticated = 128;
  // Authenticated requests parked for a late answer (rendezvous waits of up to ~605 s): a budget of
  // their own, so long waits can never take the slots of short exchanges.
  size_t waiting = 512;
};

class ConnectionBudget {
 public:
  using Ticket = uint64_t;  // increasing: a smaller ticket is an older connection

  using Time = std::chrono::steady_clock::time_point;

  struct Admission {
    Ticket ticket;
    std::optional<Ticket> evict;  // an older unauthenticated connection to close now
    bool refused = false;         // not admitted: close the newcomer (nothing to release)
  };

  explicit ConnectionBudget(ConnectionCaps caps) : caps_(caps) {}

  // A connection accepted from `source` (an address without port) at `now`: admitted, perhaps at the cost
  // of an older unauthenticated one (an idle one first), or refused when every connection it could evict
  // is a handshake in progress younger than the eviction grace.
  Admission admit(const std::string& source, Time now);
  // The same without a time: every candidate counts as old (always admitted).
  Admission admit(const std::string& source) { return admit(source, Time::max()); }
  // The connection has sent its opening (bytes arrived): it is no longer idle (see ConnectionCaps).
  void progressed(Ticket t);
  bool is_progressed(Ticket t) const;
  // Whether admitting one more from `source` would have to evict (or refuse): a cap is full.
  bool full_for(const std::string& source) const {
    return unauthenticated_from(source) >= caps_.unauthenticated_per_source ||
           unauthenticated_.size() >= caps_.unauthenticated_total;
  }
  // The unauthenticated connections that have sent nothing yet, oldest first.
  std::vector<Ticket> idle() const;
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
  // The eviction candidate among `source`'s connections: its oldest idle one, else its oldest.
  std::optional<Ticket> candidate_from(const std::string& source) const;
  void forget_unauthenticated(Ticket t);
  struct Unauthenticated {
    std::string source;
    Time since;
    bool progressed = false;
  };

  ConnectionCaps caps_;
  Ticket next_ = 1;
  std::map<Ticket, Unauthenticated> unauthenticated_;  // by age, with its source
  std::map<std::string, size_t> per_source_;       // unauthenticated connections of each source
  std::map<Ticket, State> admitted_;               // authenticated ones
  size_t authenticated_ = 0;
  size_t waiting_ = 0;
};

}  // namespace shoal::net

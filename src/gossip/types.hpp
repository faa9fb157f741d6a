// The vocabulary of the gossip core: time, member identity and metadata, member states, and the
// effects the core asks its runtime (the Asio shell or the simulator) to perform.
// Pure data: no IO, no clock, no threads.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace shoal::gossip {

// Time since an arbitrary origin chosen by the runtime (virtual in the simulator).
using Time = std::chrono::microseconds;

// Who a member is. `name` is stable across restarts (host, or host/slot); `generation` is new at
// every start, so a restarted member outranks every record of its previous life.
struct Identity {
  std::string name;
  uint64_t generation = 0;
  std::string addr;  // "host:port" of its UDP socket and TCP listener (the same port)
  bool operator==(const Identity&) const = default;
};

// What a member says about itself; gossiped with its alive record.
struct MemberMeta {
  std::string host;   // the machine's host name
  uint32_t slots = 0; // GPU slots
  std::vector<std::pair<std::string, std::string>> labels;
  bool operator==(const MemberMeta&) const = default;
};

enum class State : uint8_t { alive, suspect, dead, left };
const char* to_string(State s);

struct Member {
  Identity id;
  State state = State::alive;
  uint64_t incarnation = 0;
  MemberMeta meta;
  Time state_since{0};  // when this member's state last changed, in this member's view
  // Dead only: declared on a refusal from the member's own agent port, seen by the declarer and
  // confirmed by other members (src/gossip/README.md, "Evidence from the data plane"). The view
  // keeper may commit such a removal after a shorter settle window.
  bool refused = false;
};

// A change in this member's view of another member (or of itself).
struct MemberEvent {
  Member member;                   // the record after the change
  std::optional<State> previous;   // nullopt: first time this member is seen
};

// One UDP datagram to send, already encoded as on the wire (wire::encode_packet).
struct SendPacket {
  std::string to;
  std::vector<std::byte> bytes;
};

// What a stream request is for; the runtime names it in the connection's hello, so that the peer's
// listener can tell anti-entropy from a fallback probe (counters, limits) before reading the request.
enum class StreamPurpose : uint8_t { anti_entropy, probe };

// One request over TCP: the runtime connects to `to`, sends `bytes` as one frame, reads one frame
// back and calls Swim::on_stream_response(token, ...) with it, or with nullopt on any failure
// (refused, reset, timeout). Used for push-pull anti-entropy and the fallback probe.
struct StreamRequest {
  uint64_t token = 0;
  std::string to;
  std::vector<std::byte> bytes;
  Time deadline{0};
  StreamPurpose purpose = StreamPurpose::anti_entropy;
};

// Everything one call into the core asks for. The runtime performs and then clears it.
struct Effects {
  std::vector<SendPacket> packets;
  std::vector<StreamRequest> streams;
  std::vector<MemberEvent> events;
  std::optional<Time> wake_at;  // the core wants on_tick at (or soon after) this time

  void wake_no_later_than(Time t) {
    if (!wake_at || t < *wake_at) wake_at = t;
  }
  void clear() {
    packets.clear();
    streams.clear();
    events.clear();
    wake_at.reset();
  }
};

}  // namespace shoal::gossip

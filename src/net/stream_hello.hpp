// The opening of every shoal TCP connection: the typed hello (an Envelope with a
// Hello body, encoded like a UDP packet) that says which channel the connection is for.
//   client: [hello frame][request frame]    server: [response frame], then close.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "envelope.pb.h"
#include "net/cluster_seal.hpp"
#include "wire/frame.hpp"
#include "wire/reject.hpp"

namespace shoal::net {

// A hello ready to open connections: its payload, and the cluster seal. A sealed hello is good for one
// connection only (listeners refuse replays), so every connection gets a freshly sealed copy.
struct OutgoingHello {
  OutgoingHello() = default;
  OutgoingHello(std::vector<std::byte> hello_payload, std::shared_ptr<ClusterSeal> cluster_seal = nullptr)  // NOLINT
      : payload(std::move(hello_payload)), seal(std::move(cluster_seal)) {}
  std::vector<std::byte> for_connection() const { return seal ? seal->seal_hello(payload) : payload; }

  std::vector<std::byte> payload;
  std::shared_ptr<ClusterSeal> seal;  // null: an open cluster
};

// A hello is small; anything bigger is refused before it is buffered.
inline constexpr size_t kMaxHelloBytes = 1024;

struct PeerHello {
  wire::Hello::Channel channel = wire::Hello::CHANNEL_UNSPECIFIED;
  std::string name;
  uint64_t generation = 0;
  std::string addr;  // the address the peer advertises (its UDP and TCP port)
};

// The payload of a hello frame for `channel`, from the sender identified by `sender`.
std::vector<std::byte> encode_hello(const wire::Envelope& sender, wire::Hello::Channel channel);

// Validates a hello frame's payload: header, protocol version, cluster id (when `expected_cluster` is
// not empty), a known channel.
Result<PeerHello, wire::DecodeError> decode_hello(std::span<const std::byte> payload,
                                                  const std::string& expected_cluster);

}  // namespace shoal::net

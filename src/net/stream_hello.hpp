// The opening of every shoal TCP connection: the typed hello (an Envelope with a
// Hello body, encoded like a UDP packet) that says which channel the connection is for.
//   open cluster:  client: [hello frame][request frame]    server: [response frame], then close.
//   keyed cluster: client: [hello frame: handshake message 1, the hello inside]
//                  server: [handshake frame: message 2]
//                  client: [handshake frame: message 3][sealed request frame]
//                  server: [sealed response frame], then close.
// (wire/stream_handshake.hpp: the handshake; wire/frame_cipher.hpp: sealed frames.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "envelope.pb.h"
#include "net/cluster_seal.hpp"
#include "net/host_port.hpp"
#include "wire/frame.hpp"
#include "wire/reject.hpp"
#include "wire/stream_handshake.hpp"

namespace shoal::net {

// How one connection opens: the first frame's payload, and in a keyed cluster the handshake that the
// server's reply continues.
struct ConnectionOpening {
  std::vector<std::byte> hello;
  std::optional<wire::ClientHandshake> handshake;  // nullopt: an open cluster, no handshake
};

// A hello ready to open connections: its payload, and the cluster seal. A keyed connection's first
// message is good for that connection only (listeners refuse replays, and it names the destination),
// so every connection gets a fresh one.
struct OutgoingHello {
  OutgoingHello() = default;
  OutgoingHello(std::vector<std::byte> hello_payload, std::shared_ptr<ClusterSeal> cluster_seal = nullptr)  // NOLINT
      : payload(std::move(hello_payload)), seal(std::move(cluster_seal)) {}
  // `to`: the numeric ip:port dialled. (Inline, so that what decodes hellos alone, the fuzz target,
  // links no seal.)
  ConnectionOpening open_to(std::string_view to) const {
    if (!keyed()) return ConnectionOpening{payload, std::nullopt};
    auto handshake = seal->start_handshake(payload, canonical_ip_port(to));
    ConnectionOpening out{handshake.hello_message(), std::nullopt};
    out.handshake.emplace(std::move(handshake));
    return out;
  }
  bool keyed() const { return seal && seal->keyed(); }

  std::vector<std::byte> payload;
  std::shared_ptr<ClusterSeal> seal;  // null: an open cluster
};

// The largest handshake frame (message 2 or 3), read before the connection's keys exist.
inline constexpr size_t kMaxHandshakeFrameBytes = wire::kHandshakeReplyBytes;

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

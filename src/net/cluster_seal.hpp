// ClusterSeal: the cluster key as one agent (or embedded or connected session) applies it. Every UDP
// datagram it sends is sealed for its destination and every one it receives must open for one of this
// host's addresses; every TCP connection starts with the handshake of wire/stream_handshake.hpp, whose
// first message must open at the listener before anything else of the connection is read, and whose keys
// seal every frame after it (wire/frame_cipher.hpp). Without a key the cluster is open: bytes pass as
// they are, and sealed input is refused as no_key.
//
// Thread-safe (one mutex): the agent's loop seals and opens packets, trainer threads of an embedded
// session open connections too. Hellos have their own sealer and replay guard, because the guard's
// window counts a sender's counter, which UDP traffic would otherwise push past a slow connection's.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "wire/cluster_key.hpp"
#include "wire/reject.hpp"
#include "wire/replay_guard.hpp"
#include "wire/sealed_packet.hpp"
#include "wire/stream_handshake.hpp"

namespace shoal::net {

class ClusterSeal {
 public:
  // nullopt: an open cluster.
  explicit ClusterSeal(std::optional<wire::KeyRing> keys);

  bool keyed() const;
  // A datagram for `destination` (ip:port text, as canonical_ip_port writes it).
  std::vector<std::byte> seal_packet(std::span<const std::byte> plain, std::string_view destination);
  // A datagram that must have been sealed for one of `own` (this host's addresses, canonical).
  Result<std::vector<std::byte>, wire::DecodeError> open_packet(std::span<const std::byte> bytes,
                                                                wire::Destinations own);

  // Keyed only (see keyed()): the client's first message of a connection to `destination`, carrying the
  // hello payload, and the server's acceptance of one that arrived at one of `own`.
  wire::ClientHandshake start_handshake(std::span<const std::byte> hello, std::string_view destination);
  Result<wire::ServerHandshake, wire::DecodeError> accept_handshake(std::span<const std::byte> first,
                                                                    wire::Destinations own);

  // A reloaded key file (SIGHUP): the sender ids and counters, and what the guards remember, carry
  // over. Refused when the cluster was started open (every peer would refuse us at once) or keyed and
  // the new ring is nullopt.
  Status set_keys(std::optional<wire::KeyRing> keys);
  // The key ids of the ring, sending key first ("1a2b3c4d, 5e6f7a8b"); empty when open.
  std::string key_ids() const;

 private:
  mutable std::mutex mu_;
  std::optional<wire::PacketSealer> packets_;
  std::optional<wire::PacketSealer> hellos_;
  wire::ReplayGuard packet_guard_;
  wire::ReplayGuard hello_guard_;
  uint8_t cipher_offer_ = 0;
};

// The key ring of --key-file PATH (nullopt without one), for the agent and embedded sessions.
Result<std::optional<wire::KeyRing>> load_cluster_keys(const std::string& path);

}  // namespace shoal::net

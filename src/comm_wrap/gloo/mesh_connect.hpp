// MeshContext: a Gloo context whose full mesh connects without chains of waits between ranks.
//
// Gloo's own connectFullMesh (the 2022-05 snapshot Debian ships) costs a rebuild tens of milliseconds
// on a busy host: every rank first publishes its host name and reads every lower rank's one key at a
// time (used only for a local rank that its TCP transport never reads), then waits for each peer's key
// and connects the pairs in rank order. A pair's connect blocks on the listening side until the peer
// reaches that pair in its own loop, which may itself be blocked on an earlier listening pair: waits
// chain across processes, one scheduling delay per link. Here a rank publishes its pair addresses,
// reads every peer's in one exchange, starts every connect it initiates, and only then waits for the
// connects its peers initiate, which none of them waits on anything to start.
#pragma once

#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/device.h>

#include <memory>
#include <vector>

namespace shoal::comm {

class MeshContext final : public gloo::rendezvous::Context {
 public:
  MeshContext(int rank, int size) : gloo::rendezvous::Context(rank, size) {}

  // Connects a pair to every other rank through `store` (key: this rank's number, value: its pairs'
  // addresses, as Gloo lays them out) on `device`. Gloo's exceptions and the store's pass through.
  void connect_mesh(gloo::rendezvous::Store& store, const std::shared_ptr<gloo::transport::Device>& device);
};

// Which side of a pair opens the TCP connection, by Gloo's rule (tcp/pair.cc): the side whose address
// (IP bytes, then port) compares greater connects, the other listens. Decided from both sides'
// published address bytes; nullopt when they cannot be compared (then the order does not matter).
std::optional<bool> gloo_initiates(const std::vector<char>& self, const std::vector<char>& peer);

}  // namespace shoal::comm

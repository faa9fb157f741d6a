// The Gloo backend: collectives on CPU buffers over Gloo's TCP transport, bootstrapped from the
// epoch's rendezvous store.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "comm_wrap/communicator.hpp"
#include "comm_wrap/rendezvous_store.hpp"

namespace shoal::comm {

struct GlooOptions {
  int rank = 0;
  int world_size = 1;
  uint64_t epoch = 0;
  // The IP address or host name whose interface the Gloo TCP device binds to (port chosen by the OS).
  std::string bind_host = "127.0.0.1";
  // Bounds each collective end to end; past it the collective throws shoal::Timeout.
  std::chrono::milliseconds collective_timeout{std::chrono::seconds(30)};
  // Bounds the rendezvous (each store wait) and each pair's TCP connect.
  std::chrono::milliseconds rendezvous_timeout{std::chrono::seconds(30)};
  // Evidence for the agent: a collective failed because the connection to `peer_rank` was closed or
  // reset (Gloo names the pair). Called once per failed collective, on the caller's thread, before the
  // communicator shuts its own sockets. May be empty.
  std::function<void(int peer_rank)> on_peer_lost;
};

// Connects the full mesh of `options.world_size` ranks through `store` (keys under "gloo/"), all ranks
// calling at once. Throws rather than returning a result, because its failures are the ones a trainer
// handles anyway: shoal::ViewChanged when the store's epoch is superseded meanwhile, shoal::Timeout
// when a peer does not show up in time (the message names the missing keys), shoal::Error for bad
// options or a device that cannot bind. Requires a build with Gloo (SHOAL_HAVE_GLOO).
std::unique_ptr<Communicator> make_gloo_communicator(const GlooOptions& options, RendezvousStore& store);

}  // namespace shoal::comm

// The communicator a session builds for a committed view: Gloo on CPU buffers, or NCCL on GPU buffers
// (where this build found NCCL). For NCCL, a change that is leaves only shrinks the previous
// communicator (ncclCommShrink) per plan_rebuild; anything else, or a failed shrink, is a fresh init
// from the epoch's rendezvous store.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "comm_wrap/bootstrap_tree.hpp"
#include "comm_wrap/communicator.hpp"
#include "comm_wrap/rendezvous_store.hpp"

namespace shoal::ranks {
class RankTable;
}

namespace shoal::comm {

enum class Backend : uint8_t { gloo, nccl };

struct SessionCommSpec {
  Backend backend = Backend::gloo;
  int rank = 0;
  int world_size = 1;
  uint64_t epoch = 0;
  std::string bind_ip;  // Gloo: this host's address for the collective's own connections
  int cuda_device = 0;  // NCCL
  std::chrono::milliseconds rendezvous_timeout{30'000};
  std::chrono::milliseconds collective_timeout{300'000};
  // A collective failed because its connection to `peer_rank` closed (Gloo; see GlooOptions). May be empty.
  std::function<void(int peer_rank)> on_peer_lost;
  // NCCL: this rank's node and local rank, the view's node count, and every node's agent store (the unique id
  // travels along the bootstrap tree, bootstrap_tree.hpp); empty store_at: all from the one store.
  uint32_t node_rank = 0;
  uint32_t local_rank = 0;
  uint32_t node_count = 1;
  StoreAt store_at;
  // The communicator of the previous view and the two rank tables, for a shrink; may be null.
  Communicator* previous = nullptr;
  const ranks::RankTable* before = nullptr;
  const ranks::RankTable* after = nullptr;
};

// The backend's communicator inside a TimedCommunicator (its collectives timed for node health). Throws
// like the backend factories: ViewChanged, Timeout, or Error when the backend is not compiled in.
std::shared_ptr<Communicator> make_session_communicator(const SessionCommSpec& spec, RendezvousStore& store);

}  // namespace shoal::comm

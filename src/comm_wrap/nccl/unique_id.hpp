// The NCCL unique id of an epoch: rank 0 creates it (ncclGetUniqueId, which needs no GPU) and publishes
// it in the epoch's rendezvous store; every other rank reads it from there, or, given the stores of every
// node's agent, along the bootstrap tree (bootstrap_tree.hpp: each node's first rank from its parent node,
// the node's other ranks from their own agent). Built where NCCL is found.
#pragma once

#include <nccl.h>

#include <chrono>

#include "comm_wrap/bootstrap_tree.hpp"
#include "comm_wrap/rendezvous_store.hpp"

namespace shoal::comm {

// Rank 0 of an epoch publishes its ncclUniqueId (128 bytes) under this key of the epoch's store.
inline constexpr const char* kNcclUniqueIdKey = "nccl/unique_id";

// Throws what the store throws (ViewChanged for a superseded epoch, Timeout naming the key), or
// shoal::Error when NCCL cannot make an id or the stored one has the wrong size.
ncclUniqueId exchange_unique_id(int rank, RendezvousStore& store, std::chrono::milliseconds timeout);
// The same along `route` over the nodes' stores.
ncclUniqueId exchange_unique_id(const BootstrapRoute& route, const StoreAt& store_at,
                                std::chrono::milliseconds timeout);

}  // namespace shoal::comm

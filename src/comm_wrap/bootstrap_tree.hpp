// How a per-epoch bootstrap value (NCCL's unique id) reaches every rank without a herd at one agent. Rank 0
// makes it and publishes it on its own agent (node 0's); each other node's first rank (local rank 0) reads it
// from its parent node's agent in a tree of `fanout` children per node over the view's nodes (members that hold
// ranks, by node rank) and publishes it on its own node's agent; every other rank of a node reads it from its
// own node's agent. So no agent serves more than `fanout` other nodes' first ranks plus its own node's ranks,
// and the value is `bootstrap_depth` hops from rank 0 (4 at 25,000 nodes with 16 children each), where
// before every rank of the job read it from rank 0's agent, which also runs that host's gossip.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "comm_wrap/rendezvous_store.hpp"

namespace shoal::comm {

inline constexpr uint32_t kBootstrapFanout = 16;

struct BootstrapRoute {
  bool make = false;                   // rank 0: makes the value
  std::optional<uint32_t> read_from;   // the node whose agent this rank reads the value from
  std::optional<uint32_t> publish_on;  // the node whose agent this rank publishes it on (its own)
  bool operator==(const BootstrapRoute&) const = default;
};

// The route of the rank at `local_rank` of node `node_rank` (of `node_count`). fanout >= 1.
BootstrapRoute bootstrap_route(uint32_t node_rank, uint32_t local_rank, uint32_t node_count,
                               uint32_t fanout = kBootstrapFanout);
// The parent of node `node_rank` > 0 in the tree.
uint32_t bootstrap_parent(uint32_t node_rank, uint32_t fanout = kBootstrapFanout);
// Hops from node 0 to the farthest node (0 for a single node).
uint32_t bootstrap_depth(uint32_t node_count, uint32_t fanout = kBootstrapFanout);

// The epoch store served by node n's agent (the same epoch and key scope as the job's store).
using StoreAt = std::function<RendezvousStore&(uint32_t node_rank)>;

// Runs `route` for `key`: rank 0 publishes make(); the others read (waiting at most `timeout`) and publish where
// the route says. Returns the value. Throws as the stores do (Timeout, ViewChanged).
Bytes share_bootstrap_value(const BootstrapRoute& route, const std::string& key, const std::function<Bytes()>& make,
                            const StoreAt& store_at, std::chrono::milliseconds timeout);

}  // namespace shoal::comm

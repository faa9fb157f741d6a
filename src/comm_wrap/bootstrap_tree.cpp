// The bootstrap value's tree over the view's nodes, and one rank's part in handing it on.
#include "comm_wrap/bootstrap_tree.hpp"

#include <algorithm>

namespace shoal::comm {

uint32_t bootstrap_parent(uint32_t node_rank, uint32_t fanout) {
  return node_rank == 0 ? 0 : (node_rank - 1) / std::max<uint32_t>(fanout, 1);
}

uint32_t bootstrap_depth(uint32_t node_count, uint32_t fanout) {
  uint32_t depth = 0;
  for (uint32_t n = node_count == 0 ? 0 : node_count - 1; n > 0; n = bootstrap_parent(n, fanout)) ++depth;
  return depth;
}

BootstrapRoute bootstrap_route(uint32_t node_rank, uint32_t local_rank, uint32_t node_count, uint32_t fanout) {
  BootstrapRoute r;
  if (node_rank >= node_count) return r;  // not a node of the view: nothing to do (the caller refuses it)
  if (local_rank != 0) {
    r.read_from = node_rank;
    return r;
  }
  if (node_rank == 0) {
    r.make = true;
  } else {
    r.read_from = bootstrap_parent(node_rank, fanout);
  }
  r.publish_on = node_rank;
  return r;
}

Bytes share_bootstrap_value(const BootstrapRoute& route, const std::string& key, const std::function<Bytes()>& make,
                            const StoreAt& store_at, std::chrono::milliseconds timeout) {
  Bytes value;
  if (route.make) {
    value = make();
  } else if (route.read_from) {
    value = store_at(*route.read_from).get(key, timeout);
  }
  if (route.publish_on) store_at(*route.publish_on).set(key, value);
  return value;
}

}  // namespace shoal::comm

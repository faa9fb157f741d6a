// Replica placement: the interleaved host ring and the successor walk over it.
#include "ranks/replica_placement.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace shoal::ranks {

namespace {

// MurmurHash3's 64-bit finalizer. FNV-1a alone barely mixes its last byte, so "node01".."node09"
// would keep their name order on the ring; the finalizer scatters them.
uint64_t mix64(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

struct HostGroup {
  uint64_t key = 0;
  std::string host;
  std::vector<size_t> members;  // indices into the view, in view order
};

struct Ring {
  std::vector<size_t> order;  // view indices
  size_t host_count = 0;
};

// Ring of view indices: round j holds the j-th member of every host that has one, hosts in key order.
Ring interleaved_ring(const membership::View& view) {
  std::map<std::string, HostGroup> by_host;
  for (size_t i = 0; i < view.members().size(); ++i) {
    const membership::ViewMember& m = view.members()[i];
    if (m.slots == 0) continue;
    HostGroup& g = by_host[m.host];
    g.host = m.host;
    g.members.push_back(i);
  }
  std::vector<HostGroup> hosts;
  size_t rounds = 0;
  for (auto& [name, g] : by_host) {
    g.key = mix64(membership::fnv1a64(name));
    rounds = std::max(rounds, g.members.size());
    hosts.push_back(std::move(g));
  }
  std::sort(hosts.begin(), hosts.end(),
            [](const HostGroup& a, const HostGroup& b) { return std::tie(a.key, a.host) < std::tie(b.key, b.host); });
  Ring ring;
  ring.host_count = hosts.size();
  for (size_t round = 0; round < rounds; ++round) {
    for (const HostGroup& g : hosts) {
      if (round < g.members.size()) ring.order.push_back(g.members[round]);
    }
  }
  return ring;
}

}  // namespace

ReplicaPlacement place_replicas(const membership::View& view, uint32_t replicas) {
  ReplicaPlacement placement;
  placement.replicas = replicas;
  const auto& members = view.members();
  const Ring ring_info = interleaved_ring(view);
  const std::vector<size_t>& ring = ring_info.order;
  // Holders sit on distinct hosts other than the owner's: never more than host_count - 1.
  const size_t reachable = ring_info.host_count == 0 ? 0 : std::min<size_t>(replicas, ring_info.host_count - 1);

  std::vector<ReplicaAssignment> by_view_index(members.size());
  for (size_t pos = 0; pos < ring.size(); ++pos) {
    const membership::ViewMember& owner = members[ring[pos]];
    ReplicaAssignment a{owner.name, {}};
    std::vector<const std::string*> used_hosts = {&owner.host};
    for (size_t step = 1; step < ring.size() && a.holders.size() < reachable; ++step) {
      const membership::ViewMember& c = members[ring[(pos + step) % ring.size()]];
      const bool host_taken =
          std::any_of(used_hosts.begin(), used_hosts.end(), [&](const std::string* h) { return *h == c.host; });
      if (host_taken) continue;
      a.holders.push_back(c.name);
      used_hosts.push_back(&c.host);
    }
    by_view_index[ring[pos]] = std::move(a);
  }
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i].slots == 0) continue;
    if (by_view_index[i].holders.size() < replicas) placement.short_owners.push_back(members[i].name);
    placement.assignments.push_back(std::move(by_view_index[i]));
  }
  return placement;
}

const ReplicaAssignment* ReplicaPlacement::of(std::string_view owner) const {
  for (const ReplicaAssignment& a : assignments) {
    if (a.owner == owner) return &a;
  }
  return nullptr;
}

std::vector<std::string> ReplicaPlacement::held_by(std::string_view holder) const {
  std::vector<std::string> owners;
  for (const ReplicaAssignment& a : assignments) {
    if (std::find(a.holders.begin(), a.holders.end(), holder) != a.holders.end()) owners.push_back(a.owner);
  }
  return owners;
}

}  // namespace shoal::ranks

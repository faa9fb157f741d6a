// Replica placement for in-memory checkpoints: which members keep a copy of each member's latest
// checkpoint. A pure function of the View and R, the same on every host.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "membership/view.hpp"

namespace shoal::ranks {

struct ReplicaAssignment {
  std::string owner;                 // a member with slots > 0
  std::vector<std::string> holders;  // R members, on R distinct hosts, none on the owner's host
  bool operator==(const ReplicaAssignment&) const = default;
};

struct ReplicaPlacement {
  uint32_t replicas = 0;                       // R, as asked
  std::vector<ReplicaAssignment> assignments;  // one per member with slots > 0, in view order
  // Owners with fewer than R holders: fewer than R other hosts hold ranks. They got all there are.
  std::vector<std::string> short_owners;

  bool complete() const { return short_owners.empty(); }
  // nullptr for a witness or an unknown name.
  const ReplicaAssignment* of(std::string_view owner) const;
  // The owners whose replicas `holder` keeps, in view order.
  std::vector<std::string> held_by(std::string_view holder) const;
  bool operator==(const ReplicaPlacement&) const = default;
};

// Only members with slots > 0 take part, as owners and as holders; witnesses keep nothing.
//
// The rule: hosts are ordered by (key, host name), key = fmix64(fnv1a64(host name)) (fmix64 is
// MurmurHash3's 64-bit finalizer), and each host's members by view order. The ring lists round 0
// (every host's first member, in host order), then round 1 (every host's second member), and so on.
// An owner's holders are the first R members after it on the ring whose host is neither the
// owner's nor an already chosen holder's.
//
// Why: hashing host names scatters neighbours (node01, node02, often one rack) around the ring;
// interleaving rounds keeps a host's members apart. A join or a leave inserts or removes one ring
// position and so moves only the assignments next to it.
//
// Bounds, asserted over random views by tests/ranks/replica_placement_test.cpp, with more than R
// hosts and k = the most members with slots on one host:
// - spread: with the same number of members on every host, each member holds exactly R; otherwise
//   max - min held <= R * (k - fewest members on a host) + 1 (uneven hosts force some imbalance);
// - stability, in replicas streamed to a new holder: a join (newest join epoch) moves <= R * k, a
//   leave <= R * (2k - 1), as the leaver's later host-mates move up one round. With one member per
//   host, the usual deployment, both are <= R.
ReplicaPlacement place_replicas(const membership::View& view, uint32_t replicas = 1);

}  // namespace shoal::ranks

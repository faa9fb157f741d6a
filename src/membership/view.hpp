// The View: one committed member list (epoch, members in canonical order) and its stable hash.
// It is all that src/ranks and everything after it sees of membership; pure data, no IO.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"

namespace shoal::membership {

// A member as the committed view records it.
//
// slots == 0 makes the member a witness: it is in the view and counts for agreement, but holds no
// ranks and no checkpoint replicas (a CPU-only tie-breaker host, or a host whose GPUs are drained).
struct ViewMember {
  std::string name;         // unique in the view, stable across restarts
  std::string host;         // the machine's host name; several members may share one
  std::string addr;         // "host:port" (IPv6 in brackets) the member's agent listens on
  uint32_t slots = 0;       // GPU slots = ranks this member runs
  uint64_t join_epoch = 0;  // the epoch of the first view that included it (<= the view's epoch)
  uint64_t generation = 0;  // the gossip generation of the process admitted (a restart is a new member)
  bool operator==(const ViewMember&) const = default;
};

// An address split into its parts; `host` carries no brackets.
struct Endpoint {
  std::string host;
  uint16_t port = 0;
  bool operator==(const Endpoint&) const = default;
};

// Parses "host:port" or "[v6]:port" with port 1..65535. (The agent has its own parser for what users
// type; membership cannot depend on the agent.)
Result<Endpoint> parse_endpoint(std::string_view addr);

// Limits that catch corrupt views early rather than deriving absurd rank tables from them.
inline constexpr uint32_t kMaxSlotsPerMember = 1024;
// A view of more members, or with a longer name, host or address, is refused as a whole (from_msg):
// the same bounds gossip puts on its records (gossip/member_table.hpp).
inline constexpr size_t kMaxViewMembers = 65536;
inline constexpr size_t kMaxViewTextBytes = 1024;
// The most members one view may hold excluded (`shoal view exclude`): a rack or a row of a large job, not
// more (from_msg refuses a longer list).
inline constexpr size_t kMaxViewExcluded = 4096;

class View {
 public:
  // The empty view at epoch 0: nobody yet.
  View();

  // Validates the members and orders them canonically by (join_epoch, name), so that the order in
  // which they were supplied never matters. Refuses: an empty or duplicate name, an empty host, an
  // address that does not parse or that another member has too, slots above kMaxSlotsPerMember, a
  // join_epoch after `epoch`. `lineage` names the cluster (see lineage()). `evicted` names the members of
  // the previous view that this one removes as stragglers (node health's eviction, opt-in): none of them
  // may be a member; kept sorted. `excluded` names the hosts the operator keeps out (`shoal view exclude`,
  // --precheck-exclude): carried from view to view until readmitted; none of them may be a member; sorted.
  static Result<View> make(uint64_t epoch, std::vector<ViewMember> members, uint64_t lineage = 0,
                           std::vector<std::string> evicted = {}, std::vector<std::string> excluded = {});

  uint64_t epoch() const { return epoch_; }
  const std::vector<ViewMember>& members() const { return members_; }
  // The cluster's lineage: chosen once, by the proposer of the cluster's first view (first_lineage()), and
  // copied into every later view, so every view of one cluster carries the same value and two clusters
  // (two runs of one job, two concurrent clusters of one id) differ. 0: an agent too old to set it.
  uint64_t lineage() const { return lineage_; }
  size_t size() const { return members_.size(); }
  // The members of the previous view this one removed as stragglers (sorted; usually empty).
  const std::vector<std::string>& evicted() const { return evicted_; }
  bool evicts(std::string_view name) const;
  // The members the operator keeps out of views (sorted; usually empty): every later view carries the same
  // list until a view change readmits some of them.
  const std::vector<std::string>& excluded() const { return excluded_; }
  bool excludes(std::string_view name) const;

  // FNV-1a 64 over canonical_encoding(); equal views give equal hashes on every machine and build.
  uint64_t hash() const { return hash_; }

  // nullptr / nullopt when no member has that name.
  const ViewMember* find(std::string_view name) const;
  std::optional<size_t> index_of(std::string_view name) const;

  // Sum of slots over all members: the world size of the ranks derived from this view.
  uint64_t total_slots() const;

  // Equal epoch and equal members in the same (canonical) order; the hash then agrees too.
  bool operator==(const View& other) const {
    return epoch_ == other.epoch_ && lineage_ == other.lineage_ && members_ == other.members_ &&
           evicted_ == other.evicted_ && excluded_ == other.excluded_;
  }

  // One line for logs: "view e=7 h=1f2e3d4c5b6a7980 n=2 [a(h1 h1:7946 s=8 j=1 g=3), b(...)]" (with
  // " l=<lineage>" after the hash when it is set).
  std::string to_string() const;

 private:
  View(uint64_t epoch, std::vector<ViewMember> members, uint64_t lineage, std::vector<std::string> evicted,
       std::vector<std::string> excluded);

  uint64_t epoch_ = 0;
  uint64_t lineage_ = 0;
  std::vector<ViewMember> members_;
  std::vector<std::string> evicted_;
  std::vector<std::string> excluded_;
  uint64_t hash_ = 0;
  // Member indices ordered by name: find() is a binary search (the keeper looks members up for every
  // gossip change, so a linear scan made each change O(N^2) at a thousand members).
  std::vector<uint32_t> by_name_;
};

// The bytes the hash is computed over, all integers little-endian:
//   "shoal.view.v1" | u64 epoch | u64 member count |
//   per member in canonical order: str name | str host | str addr | u32 slots | u64 join_epoch |
//   u64 generation
// and, only when the view evicts someone (so that every other view keeps its hash):
//   "evicted" | u64 count | str name per evicted member, sorted
// and, only when the view excludes someone (the same rule):
//   "excluded" | u64 count | str name per excluded member, sorted
// where str is a u32 byte length followed by the bytes; with a lineage (not 0) the tag is "shoal.view.v2"
// and u64 lineage follows the epoch, so a view without one hashes as it always did. Changing this layout
// changes every hash: bump the tag and the pinned values in tests/ranks/view_test.cpp together.
std::string canonical_encoding(uint64_t epoch, const std::vector<ViewMember>& members, uint64_t lineage = 0,
                               const std::vector<std::string>& evicted = {},
                               const std::vector<std::string>& excluded = {});

// The lineage the proposer of a cluster's first view gives it: a hash of that view's members (in
// canonical order, generations included) and of the proposer's own name and gossip generation. A
// generation is new at every start of an agent, so a cluster formed again, even of the same hosts, gets
// another lineage; the same inputs give the same value (the simulator replays it). Never 0.
uint64_t first_lineage(const std::vector<ViewMember>& members, std::string_view proposer, uint64_t generation);

// FNV-1a, 64 bits (offset basis 0xcbf29ce484222325, prime 0x100000001b3). Also the stable hash that
// replica placement uses for host keys.
uint64_t fnv1a64(std::string_view bytes);

}  // namespace shoal::membership

// RankTable: the ranks a committed View implies (global, local, node rank, sizes, rank 0's address),
// and survivor_ranks, the old->new renumbering between two tables. Pure functions of the View.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "membership/view.hpp"

namespace shoal::ranks {

// One rank: a (member, slot) pair. Field names follow torchrun's variables.
struct RankEntry {
  uint32_t global_rank = 0;       // RANK
  uint32_t local_rank = 0;        // LOCAL_RANK: the slot index on its member
  uint32_t node_rank = 0;         // GROUP_RANK: the member's index among members with slots > 0
  uint32_t local_world_size = 0;  // LOCAL_WORLD_SIZE: the member's slot count
  std::string member;             // the member's name
  bool operator==(const RankEntry&) const = default;
};

// One member that holds ranks; its ranks are [first_rank, first_rank + slots).
struct RankNode {
  uint32_t node_rank = 0;
  uint32_t first_rank = 0;
  uint32_t slots = 0;
  membership::ViewMember member;
  bool operator==(const RankNode&) const = default;
};

// Ranks follow the view's canonical order, (join_epoch, name), and one member's slots are
// contiguous. Hence a join never changes an existing rank (newcomers have the largest join_epoch and
// go to the end), and a leave compacts the survivors in their old order. Witnesses (slots == 0) get
// no ranks and no node rank.
class RankTable {
 public:
  explicit RankTable(const membership::View& view);

  uint64_t epoch() const { return epoch_; }
  uint64_t view_hash() const { return view_hash_; }
  uint32_t world_size() const { return static_cast<uint32_t>(ranks_.size()); }
  // GROUP_WORLD_SIZE: members with slots > 0.
  uint32_t node_count() const { return static_cast<uint32_t>(nodes_.size()); }

  // Indexed by global rank / node rank.
  const std::vector<RankEntry>& ranks() const { return ranks_; }
  const std::vector<RankNode>& nodes() const { return nodes_; }

  // nullptr when out of range or unknown.
  const RankEntry* at(uint32_t global_rank) const;
  const RankEntry* find(std::string_view member, uint32_t slot) const;
  const RankNode* node_of(std::string_view member) const;
  // All ranks of one member in slot order; empty for a witness or an unknown name.
  std::span<const RankEntry> ranks_of(std::string_view member) const;

  // MASTER_ADDR: the host part of rank 0's member address; empty when the world is empty. MASTER_PORT
  // is not the view's to say: the agent passes the job's configured port (see torchrun_env.hpp).
  const std::string& master_addr() const { return master_addr_; }

  bool operator==(const RankTable&) const = default;

 private:
  uint64_t epoch_ = 0;
  uint64_t view_hash_ = 0;
  std::vector<RankEntry> ranks_;
  std::vector<RankNode> nodes_;
  std::map<std::string, uint32_t, std::less<>> node_by_name_;  // name -> node rank
  std::string master_addr_;
};

// How the ranks of `before` map onto the ranks of `after`.
//
// A rank survives when a rank of `after` has the same member name, join_epoch, generation, host,
// addr and slot index: a member that restarted (new generation), was readmitted (new join_epoch) or
// moved is a new process, not a survivor.
struct SurvivorMap {
  // Indexed by old global rank: the new rank, or nullopt for a rank that is gone.
  std::vector<std::optional<uint32_t>> new_rank_of_old;
  // Old ranks that are gone, ascending: ncclCommShrink's exclude list.
  std::vector<uint32_t> removed_old_ranks;
  // Ranks of `after` that did not exist before (joins, readmissions, added slots), ascending.
  std::vector<uint32_t> added_new_ranks;
  // True when `after` has no rank that `before` lacked, so shrinking the old communicator by
  // removed_old_ranks yields exactly `after`'s ranks (survivors compacted in their old order).
  bool leaves_only() const { return added_new_ranks.empty(); }
};

SurvivorMap survivor_ranks(const RankTable& before, const RankTable& after);

}  // namespace shoal::ranks

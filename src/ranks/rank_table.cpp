// RankTable construction and lookups, and the survivor renumbering between two tables.
#include "ranks/rank_table.hpp"

#include <tuple>

namespace shoal::ranks {

RankTable::RankTable(const membership::View& view) : epoch_(view.epoch()), view_hash_(view.hash()) {
  // The view's members are already in canonical (join_epoch, name) order; ranks follow it.
  for (const membership::ViewMember& m : view.members()) {
    if (m.slots == 0) continue;  // a witness: in the view, but no ranks
    const auto node_rank = static_cast<uint32_t>(nodes_.size());
    const auto first_rank = static_cast<uint32_t>(ranks_.size());
    nodes_.push_back(RankNode{node_rank, first_rank, m.slots, m});
    node_by_name_.emplace(m.name, node_rank);
    for (uint32_t slot = 0; slot < m.slots; ++slot) {
      ranks_.push_back(RankEntry{first_rank + slot, slot, node_rank, m.slots, m.name});
    }
  }
  if (!nodes_.empty()) {
    // View::make validated every address, so rank 0's parses.
    auto ep = membership::parse_endpoint(nodes_.front().member.addr);
    if (ep) master_addr_ = ep->host;
  }
}

const RankEntry* RankTable::at(uint32_t global_rank) const {
  return global_rank < ranks_.size() ? &ranks_[global_rank] : nullptr;
}

const RankNode* RankTable::node_of(std::string_view member) const {
  const auto it = node_by_name_.find(member);
  return it == node_by_name_.end() ? nullptr : &nodes_[it->second];
}

const RankEntry* RankTable::find(std::string_view member, uint32_t slot) const {
  const RankNode* node = node_of(member);
  if (node == nullptr || slot >= node->slots) return nullptr;
  return &ranks_[node->first_rank + slot];
}

std::span<const RankEntry> RankTable::ranks_of(std::string_view member) const {
  const RankNode* node = node_of(member);
  if (node == nullptr) return {};
  return std::span<const RankEntry>(ranks_).subspan(node->first_rank, node->slots);
}

namespace {

// The same process in both views: a restarted, readmitted or moved member is a different one.
bool same_process(const membership::ViewMember& a, const membership::ViewMember& b) {
  return std::tie(a.name, a.join_epoch, a.generation, a.host, a.addr) ==
         std::tie(b.name, b.join_epoch, b.generation, b.host, b.addr);
}

}  // namespace

SurvivorMap survivor_ranks(const RankTable& before, const RankTable& after) {
  SurvivorMap map;
  map.new_rank_of_old.assign(before.world_size(), std::nullopt);
  std::vector<bool> new_rank_survives(after.world_size(), false);
  for (const RankNode& old_node : before.nodes()) {
    const RankNode* new_node = after.node_of(old_node.member.name);
    const bool same = new_node != nullptr && same_process(old_node.member, new_node->member);
    for (uint32_t slot = 0; slot < old_node.slots; ++slot) {
      if (same && slot < new_node->slots) {
        map.new_rank_of_old[old_node.first_rank + slot] = new_node->first_rank + slot;
        new_rank_survives[new_node->first_rank + slot] = true;
      } else {
        map.removed_old_ranks.push_back(old_node.first_rank + slot);
      }
    }
  }
  for (uint32_t r = 0; r < after.world_size(); ++r) {
    if (!new_rank_survives[r]) map.added_new_ranks.push_back(r);
  }
  return map;
}

}  // namespace shoal::ranks

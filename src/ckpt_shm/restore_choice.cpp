// choose_restore: grouping what the hosts hold by step and world, and picking the newest complete step.
#include "ckpt_shm/restore_choice.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

namespace shoal::ckpt {
namespace {

// A report that holds one rank of the step being considered; local when any of its entries is.
struct Holding {
  size_t report = 0;
  bool local = false;
};

// The holdings of one step, by world and then by rank, each report at most once per rank.
using ByRank = std::map<uint32_t, std::map<size_t, bool>>;  // rank -> report -> local
using ByWorld = std::map<uint32_t, ByRank>;

// The world that the step's local copies agree on: most (report, rank) pairs held locally, the larger
// on a tie. Only local copies vote: a report's local copies are what its own host's ranks saved, so they
// are what this view's ranks vouch for; a replica says only what its pusher claimed, and a forged "rank 0
// of world 1, step 10^9" must neither pick the world nor make a step exist. nullopt when no copy of the
// step is local anywhere: then no rank of this view saved it. With `replicas_vote` (no report holds any
// local copy at all) every entry votes, as the only evidence there is.
std::optional<uint32_t> vouched_world(const ByWorld& worlds, bool replicas_vote) {
  std::optional<uint32_t> best;
  size_t best_count = 0;
  for (const auto& [world, ranks] : worlds) {
    size_t count = 0;
    for (const auto& [rank, reports] : ranks) {
      count += static_cast<size_t>(
          std::count_if(reports.begin(), reports.end(), [&](const auto& e) { return e.second || replicas_vote; }));
    }
    if (count > 0 && count >= best_count) {  // ascending worlds: >= lets the larger win a tie
      best = world;
      best_count = count;
    }
  }
  return best;
}

using ByStep = std::map<uint64_t, ByWorld, std::greater<>>;  // newest first

// What the reports hold of steps up to at_most_step, by step, world and rank (entries with world 0 or a
// rank not below their world left out).
ByStep group_by_step(std::span<const HolderReport> reports, uint64_t at_most_step) {
  ByStep steps;
  for (size_t i = 0; i < reports.size(); ++i) {
    for (const auto& h : reports[i].held) {
      if (h.step > at_most_step || h.world == 0 || h.rank >= h.world) continue;
      bool& local = steps[h.step][h.world][h.rank][i];
      local = local || h.local;
    }
  }
  return steps;
}

// Whether no report holds a local copy of anything: every host's memory was lost (a whole-cluster restart
// that brought persisted versions back from disk, which come back as replicas), so replicas are all the
// evidence there is. One real local copy anywhere is enough to take replicas' votes away.
bool nothing_local(std::span<const HolderReport> reports) {
  return std::none_of(reports.begin(), reports.end(), [](const HolderReport& r) {
    return std::any_of(r.held.begin(), r.held.end(), [](const HeldCheckpoint& h) { return h.local; });
  });
}

// The reports holding one rank, best first: local copies, then by holder name, address and index.
std::vector<size_t> ordered_holders(std::span<const HolderReport> reports, const std::map<size_t, bool>& holding) {
  std::vector<Holding> list;
  for (const auto& [report, local] : holding) list.push_back(Holding{report, local});
  std::sort(list.begin(), list.end(), [&](const Holding& a, const Holding& b) {
    const auto& ra = reports[a.report];
    const auto& rb = reports[b.report];
    if (a.local != b.local) return a.local;
    return std::tie(ra.holder, ra.address, a.report) < std::tie(rb.holder, rb.address, b.report);
  });
  std::vector<size_t> order;
  order.reserve(list.size());
  for (const auto& h : list) order.push_back(h.report);
  return order;
}

}  // namespace

std::optional<RestoreChoice> choose_restore(std::span<const HolderReport> reports, uint64_t at_most_step) {
  const bool replicas_vote = nothing_local(reports);
  for (const auto& [step, worlds] : group_by_step(reports, at_most_step)) {
    const auto vouched = vouched_world(worlds, replicas_vote);
    if (!vouched) continue;
    const uint32_t world = *vouched;
    const ByRank& ranks = worlds.at(world);
    // Ranks are below the world, so the step is complete exactly when all of them are present; this
    // also keeps a report claiming a huge world from making us allocate for it.
    if (ranks.size() != world) continue;
    RestoreChoice choice{step, world, {}};
    choice.holders.reserve(world);
    for (const auto& [rank, holding] : ranks) choice.holders.push_back(ordered_holders(reports, holding));
    return choice;
  }
  return std::nullopt;
}

std::optional<WorldRestoreChoice> choose_restore_for_world(std::span<const HolderReport> reports,
                                                           uint64_t at_most_step) {
  const auto new_world = static_cast<uint32_t>(reports.size());
  const bool replicas_vote = nothing_local(reports);
  for (const auto& [step, worlds] : group_by_step(reports, at_most_step)) {
    const auto vouched = vouched_world(worlds, replicas_vote);
    if (!vouched) continue;
    const uint32_t world = *vouched;
    const ByRank& ranks = worlds.at(world);
    // Each new rank's source: its host's own saved ranks of this step, handed out in order to the
    // host's new ranks (a host is its address), else the modulo rule.
    std::map<std::string, std::vector<uint32_t>> own;  // address -> local saved ranks of step, ascending
    for (const auto& [rank, holding] : ranks) {
      for (const auto& [report, local] : holding) {
        if (!local) continue;
        auto& list = own[reports[report].address];
        if (std::find(list.begin(), list.end(), rank) == list.end()) list.push_back(rank);
      }
    }
    for (auto& [address, list] : own) std::sort(list.begin(), list.end());
    std::map<std::string, size_t> handed;  // address -> local ranks handed out so far
    WorldRestoreChoice out{RestoreChoice{step, world, std::vector<std::vector<size_t>>(world)}, {}};
    bool complete = true;
    for (uint32_t r = 0; r < new_world && complete; ++r) {
      const auto& address = reports[r].address;
      std::optional<uint32_t> source;
      if (auto it = own.find(address); it != own.end()) {
        auto& next = handed[address];
        if (next < it->second.size()) source = it->second[next++];
      }
      if (!source) source = source_rank_for(r, new_world, world);
      complete = source && ranks.contains(*source);
      if (complete) out.sources.push_back(*source);
    }
    if (!complete) continue;
    for (uint32_t source : out.sources) {
      auto& order = out.choice.holders[source];
      if (order.empty()) order = ordered_holders(reports, ranks.at(source));
    }
    return out;
  }
  return std::nullopt;
}

std::optional<uint32_t> source_rank_for(uint32_t new_rank, uint32_t new_world, uint32_t saved_world) {
  if (new_rank >= new_world || saved_world == 0) return std::nullopt;
  return new_rank < saved_world ? new_rank : new_rank % saved_world;
}

std::span<const size_t> holders_for_new_rank(const RestoreChoice& choice, uint32_t new_rank, uint32_t new_world) {
  const auto source = source_rank_for(new_rank, new_world, choice.world);
  if (!source || *source >= choice.holders.size()) return {};
  return choice.holders[*source];
}

}  // namespace shoal::ckpt

// The eviction policy for the host's checkpoint memory budget.
#include "ckpt_shm/host_budget.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <tuple>
#include <utility>

namespace shoal::ckpt {
namespace {

// Saturating, for the same reason as the 128-bit total below.
uint64_t add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

std::vector<bool> newest_sealed_per_rank(std::span<const HeldVersion> held) {
  std::map<std::pair<std::string, uint32_t>, size_t> newest;
  for (size_t i = 0; i < held.size(); ++i) {
    const auto& v = held[i];
    if (!v.sealed) continue;
    auto [it, inserted] = newest.try_emplace({v.job, v.rank}, i);
    const auto& cur = held[it->second];
    if (!inserted && std::tie(v.sequence, v.step) > std::tie(cur.sequence, cur.step)) it->second = i;
  }
  std::vector<bool> keep(held.size(), false);
  for (const auto& [key, index] : newest) keep[index] = true;
  return keep;
}

}  // namespace

Result<EvictionPlan> plan_eviction(std::span<const HeldVersion> held, const IncomingSave& incoming,
                                   uint64_t budget_bytes) {
  const std::vector<bool> keep = newest_sealed_per_rank(held);
  // 128 bits: sizes near 2^64 must not wrap around into "fits".
  unsigned __int128 total = incoming.bytes;
  uint64_t protected_bytes = incoming.bytes;
  std::vector<size_t> candidates;
  for (size_t i = 0; i < held.size(); ++i) {
    total += held[i].bytes;
    if (keep[i]) {
      protected_bytes = add(protected_bytes, held[i].bytes);
    } else {
      candidates.push_back(i);
    }
  }
  if (protected_bytes > budget_bytes) {
    return fail("checkpoint of rank " + std::to_string(incoming.rank) + " of job " + incoming.job + " needs " +
                std::to_string(incoming.bytes) + " bytes; with the newest complete version of every rank held (" +
                std::to_string(protected_bytes - incoming.bytes) + " bytes) that makes " +
                std::to_string(protected_bytes) + " bytes, over the host checkpoint budget of " +
                std::to_string(budget_bytes) + " bytes: raise the budget or save less");
  }
  std::sort(candidates.begin(), candidates.end(), [&](size_t a, size_t b) {
    const auto& x = held[a];
    const auto& y = held[b];
    // Unsealed before sealed; then the lowest step; then the largest; then the index, for a total order.
    return std::make_tuple(x.sealed, x.step, ~x.bytes, a) < std::make_tuple(y.sealed, y.step, ~y.bytes, b);
  });
  EvictionPlan plan;
  for (size_t i : candidates) {
    if (total <= budget_bytes) break;
    plan.drop.push_back(i);
    total -= held[i].bytes;
  }
  plan.bytes_after_save = static_cast<uint64_t>(total);  // <= budget_bytes here
  return plan;
}

}  // namespace shoal::ckpt

// A restore planned once for every rank (restore_plan.hpp).
#include "ckpt_shm/restore_plan.hpp"

#include <algorithm>
#include <map>
#include <utility>

namespace shoal::ckpt {

std::vector<uint32_t> report_writers(std::span<const ExpectedHolder> expected) {
  std::map<std::pair<std::string_view, std::string_view>, uint32_t> first;
  std::vector<uint32_t> out(expected.size());
  for (size_t r = 0; r < expected.size(); ++r) {
    const auto [it, fresh] = first.try_emplace({expected[r].holder, expected[r].address}, static_cast<uint32_t>(r));
    out[r] = it->second;
  }
  return out;
}

namespace {

RestorePlan refused(std::string why) {
  RestorePlan plan;
  plan.kind = RestorePlan::Kind::refused;
  plan.error = std::move(why);
  return plan;
}

}  // namespace

RestorePlan plan_restore(std::span<const HolderReport> reports, std::span<const std::optional<uint32_t>> wanted,
                         uint64_t at_most_step) {
  std::optional<RestoreChoice> choice;
  std::vector<uint32_t> sources;
  if (!wanted.empty()) {
    if (wanted.size() != reports.size()) {
      return refused(std::to_string(wanted.size()) + " saved ranks asked for by " + std::to_string(reports.size()) +
                     " ranks");
    }
    choice = choose_restore(reports, at_most_step);
    if (!choice) return {};
    for (size_t r = 0; r < wanted.size(); ++r) {
      if (!wanted[r]) {
        return refused("rank " + std::to_string(r) +
                       " named no saved rank to restore while rank 0 did (every rank names one, or none does)");
      }
      sources.push_back(*wanted[r]);
    }
  } else {
    auto w = choose_restore_for_world(reports, at_most_step);
    if (!w) return {};
    choice = std::move(w->choice);
    sources = std::move(w->sources);
  }
  const uint64_t step = choice->step;
  const uint32_t world = choice->world;
  // promised_bytes's first rule for every saved rank at once: what a report holding it as its own says
  // (the smallest such claim), so that the plan costs one pass over the reports, not one per rank.
  std::vector<std::optional<uint64_t>> own(world);
  for (const auto& report : reports) {
    for (const auto& h : report.held) {
      if (!h.local || h.step != step || h.rank >= world) continue;
      own[h.rank] = own[h.rank] ? std::min(*own[h.rank], h.bytes) : h.bytes;
    }
  }
  RestorePlan plan;
  plan.kind = RestorePlan::Kind::plans;
  plan.ranks.reserve(reports.size());
  for (size_t r = 0; r < reports.size(); ++r) {
    const uint32_t source = sources[r];
    if (source >= world) {
      return refused("rank " + std::to_string(r) + " asked for saved rank " + std::to_string(source) +
                     ", which did not exist at step " + std::to_string(step) + " (world " + std::to_string(world) +
                     ")");
    }
    RankPlan mine{step, world, source, {}};
    for (const size_t h : choice->holders[source]) {
      const HolderReport& report = reports[h];
      const bool seen = std::any_of(mine.holders.begin(), mine.holders.end(), [&](const PlanHolder& p) {
        return p.holder == report.holder && p.address == report.address;
      });
      if (seen || report.address.empty()) continue;
      const uint64_t bytes = own[source] ? *own[source] : held_bytes(report, source, step);
      mine.holders.push_back({report.holder, report.address, bytes});
    }
    plan.ranks.push_back(std::move(mine));
  }
  return plan;
}

std::optional<std::string> foreign_plan_holder(const RankPlan& plan, std::span<const ExpectedHolder> expected) {
  for (const auto& h : plan.holders) {
    const bool member = std::any_of(expected.begin(), expected.end(), [&](const ExpectedHolder& e) {
      return e.holder == h.holder && e.address == h.address;
    });
    if (!member) return h.holder + " at " + h.address;
  }
  return std::nullopt;
}

}  // namespace shoal::ckpt

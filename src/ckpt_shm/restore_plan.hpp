// A restore planned once, by one rank, for every rank: which step, which saved rank each new rank
// restores, and where to fetch it. The planning rank reads one report per host and hands each rank its
// own part, so a restore moves O(ranks) bytes through the epoch's store instead of every rank reading
// every rank's report (O(ranks^2)). Pure functions of the reports; the exchange is session's.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ckpt_shm/report_check.hpp"
#include "ckpt_shm/restore_choice.hpp"

namespace shoal::ckpt {

// For each rank, the rank whose report it shares: the lowest rank the view places on the same member at
// the same address. Only those ranks write a report (one per host); the others' entries are copies.
std::vector<uint32_t> report_writers(std::span<const ExpectedHolder> expected);

// Where one rank's version can be fetched, best first, with the most bytes it may have there
// (promised_bytes).
struct PlanHolder {
  std::string holder;
  std::string address;
  uint64_t bytes = 0;
  bool operator==(const PlanHolder&) const = default;
};

// One new rank's part of a restore.
struct RankPlan {
  uint64_t step = 0;
  uint32_t world = 0;   // the world the step was saved with
  uint32_t source = 0;  // the saved rank this rank restores
  std::vector<PlanHolder> holders;
  bool operator==(const RankPlan&) const = default;
};

struct RestorePlan {
  enum class Kind { none, refused, plans };
  Kind kind = Kind::none;  // none: no step is complete; refused: `error` says why, every rank throws it
  std::string error;
  std::vector<RankPlan> ranks;  // one per new rank (kind == plans)
};

// reports[r]: rank r's host's report (foreign ones already dropped, drop_foreign_reports). `wanted` empty:
// every rank restores what choose_restore_for_world gives it (its own host's version where it can);
// otherwise wanted[r] is the saved rank that rank r asked for (Session::restore's saved_rank), and the step
// is choose_restore's. A holder appears once per rank even when the reports repeat it (a host of several
// ranks). Refused when a rank asks for no saved rank while others do, or for one the step's world lacks.
RestorePlan plan_restore(std::span<const HolderReport> reports, std::span<const std::optional<uint32_t>> wanted,
                         uint64_t at_most_step = UINT64_MAX);

// A plan handed to rank `rank` may name only members of the view at their own addresses (any key holder
// can write the epoch's keys, as for reports): the first holder that is not, or nullopt when all are.
std::optional<std::string> foreign_plan_holder(const RankPlan& plan, std::span<const ExpectedHolder> expected);

}  // namespace shoal::ckpt

// What a trainer's elastic loop says its run lost (shoal.torch's job.stats()), as its agent takes it: the
// figures' one table (key, metric, kind, bound), the `trainer-stats` control request's words, checked:
//   trainer-stats SLOT KEY=VALUE ...
// SLOT is the trainer's local rank on the host; each KEY one of kTrainerFigures' keys, at most once; a count
// is a whole number, seconds and the ETTR fraction are decimals, all finite, non-negative and bounded. The
// figures are a process's own since its loop started, not the job's: a restarted trainer starts from zero.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.hpp"

namespace shoal::health {

inline constexpr const char* kTrainerStatsRequest = "trainer-stats";
// The words after the request's name, spaces included: a full report takes about 400.
inline constexpr size_t kMaxTrainerStatsBytes = 512;
// Local ranks one agent keeps reports of (also below the host's slots).
inline constexpr uint32_t kMaxTrainerRanks = 1024;

enum class FigureKind { count, seconds, fraction };

struct TrainerFigure {
  const char* key;     // as in shoal.torch.ElasticStats and the request
  const char* metric;  // the agent's /metrics name
  const char* help;
  FigureKind kind;
};

// Indices into kTrainerFigures.
enum class Figure : size_t {
  steps_completed,
  steps_discarded,
  steps_redone,
  steps_rolled_back,
  rebuilds,
  samples_trained,
  startup_s,
  rebuild_s,
  stall_s,
  save_s,
  lost_step_s,
  wall_s,
  productive_s,
  ettr,
};

inline constexpr std::array<TrainerFigure, 14> kTrainerFigures{{
    {"steps_completed", "shoal_trainer_steps_completed", "steps the local trainer completed", FigureKind::count},
    {"steps_discarded", "shoal_trainer_steps_discarded",
     "steps a view change cut short before their update (done again)", FigureKind::count},
    {"steps_redone", "shoal_trainer_steps_redone", "completed steps done again after a restore of an older step",
     FigureKind::count},
    {"steps_rolled_back", "shoal_trainer_steps_rolled_back", "completed steps a restore undid", FigureKind::count},
    {"rebuilds", "shoal_trainer_rebuilds", "worlds built after the first one", FigureKind::count},
    {"samples_trained", "shoal_trainer_samples_trained",
     "samples of the global order taken by steps completed for the first time, over all ranks", FigureKind::count},
    {"startup_s", "shoal_trainer_startup_seconds",
     "seconds the first build of a world took (the first view's wait included)", FigureKind::seconds},
    {"rebuild_s", "shoal_trainer_rebuild_seconds",
     "seconds of later builds, from the failed step to the rebuilt world's first step, less the stall",
     FigureKind::seconds},
    {"stall_s", "shoal_trainer_stall_seconds", "seconds of rebuilds spent waiting for the view they built",
     FigureKind::seconds},
    {"save_s", "shoal_trainer_save_seconds", "seconds spent saving flash checkpoints", FigureKind::seconds},
    {"lost_step_s", "shoal_trainer_lost_step_seconds", "seconds inside discarded and redone steps",
     FigureKind::seconds},
    {"wall_s", "shoal_trainer_wall_seconds", "seconds since the trainer's loop started", FigureKind::seconds},
    {"productive_s", "shoal_trainer_productive_seconds", "wall seconds less every loss above", FigureKind::seconds},
    {"ettr", "shoal_trainer_ettr", "effective training time ratio: productive seconds over wall seconds",
     FigureKind::fraction},
}};
inline constexpr size_t kTrainerFigureCount = kTrainerFigures.size();
static_assert(static_cast<size_t>(Figure::ettr) + 1 == kTrainerFigureCount);

// A count above this is no longer exact in a double (2^53); seconds above about 31 years are no run's.
inline constexpr double kMaxTrainerCount = 9007199254740992.0;
inline constexpr double kMaxTrainerSeconds = 1e9;

// One report's figures: those it named, by index; the others absent.
struct TrainerStats {
  std::array<std::optional<double>, kTrainerFigureCount> figures{};
  std::optional<double> get(Figure f) const { return figures[static_cast<size_t>(f)]; }
  bool operator==(const TrainerStats&) const = default;
};

// The figures from (key, value) pairs: each key known and named once, each value in its kind's range, at
// least one figure. A failure names the key and why.
Result<TrainerStats> make_trainer_stats(std::span<const std::pair<std::string, double>> figures);

struct TrainerStatsReport {
  uint32_t slot = 0;
  TrainerStats stats;
};
// The request's words (after its name).
Result<TrainerStatsReport> parse_trainer_stats(std::span<const std::string> args);
// The request line for `stats` from local rank `slot` (counts whole, seconds to the millisecond, the ETTR to
// six places): at most kMaxTrainerStatsBytes after the name.
std::string encode_trainer_stats(uint32_t slot, const TrainerStats& stats);

// The table's keys, in order.
std::vector<std::string> trainer_stats_keys();

}  // namespace shoal::health

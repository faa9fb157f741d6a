// Fuzz target: a `trainer-stats` request line as the agent receives it from a local trainer
// (health::parse_trainer_stats). A report is refused, or names a slot below kMaxTrainerRanks and figures each
// finite, non-negative and within its kind's bound (counts whole); written again it fits the request's bound
// and parses back to the same figures.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_words.hpp"
#include "health/trainer_stats.hpp"

using shoal::fuzz::words_of;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal::health;
  if (size > 2048) return 0;
  const auto report = parse_trainer_stats(words_of(std::string(reinterpret_cast<const char*>(data), size)));
  if (!report) return 0;
  if (report->slot >= kMaxTrainerRanks) __builtin_trap();
  for (size_t i = 0; i < kTrainerFigureCount; ++i) {
    const auto& v = report->stats.figures[i];
    if (!v) continue;
    if (!std::isfinite(*v) || *v < 0) __builtin_trap();
    switch (kTrainerFigures[i].kind) {
      case FigureKind::count:
        if (*v > kMaxTrainerCount || std::floor(*v) != *v) __builtin_trap();
        break;
      case FigureKind::seconds:
        if (*v > kMaxTrainerSeconds) __builtin_trap();
        break;
      case FigureKind::fraction:
        if (*v > 1.0) __builtin_trap();
        break;
    }
  }
  // Written again (rounded to the encoding's places), it fits and reads back.
  const std::string line = encode_trainer_stats(report->slot, report->stats);
  auto words = words_of(line);
  words.erase(words.begin());
  size_t bytes = words.size() - 1;
  for (const auto& w : words) bytes += w.size();
  if (bytes > kMaxTrainerStatsBytes) __builtin_trap();
  const auto again = parse_trainer_stats(words);
  if (!again || again->slot != report->slot) __builtin_trap();
  for (size_t i = 0; i < kTrainerFigureCount; ++i) {
    const auto& a = report->stats.figures[i];
    const auto& b = again->stats.figures[i];
    if (a.has_value() != b.has_value()) __builtin_trap();
    // Half the last place written (a millisecond, or 1e-6 of the ETTR), and the doubles' own error.
    if (a && std::fabs(*a - *b) > 0.0005 * (1 + 1e-9) + 1e-12 * *a) __builtin_trap();
  }
  return 0;
}

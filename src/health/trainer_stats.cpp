// Checking a trainer's run figures, and the `trainer-stats` request's words both ways.
#include "health/trainer_stats.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

namespace shoal::health {
namespace {

std::optional<size_t> index_of(std::string_view key) {
  for (size_t i = 0; i < kTrainerFigureCount; ++i) {
    if (key == kTrainerFigures[i].key) return i;
  }
  return std::nullopt;
}

double bound(FigureKind kind) {
  switch (kind) {
    case FigureKind::count:
      return kMaxTrainerCount;
    case FigureKind::seconds:
      return kMaxTrainerSeconds;
    case FigureKind::fraction:
      return 1.0;
  }
  return 0;
}

// Why `value` is no figure of `kind`; empty when it is one.
std::string out_of_range(FigureKind kind, double value) {
  if (!std::isfinite(value) || value < 0) return "is not a finite non-negative number";
  if (value > bound(kind)) return fmt::format("is above {}", bound(kind));
  if (kind == FigureKind::count && std::floor(value) != value) return "is not a whole count";
  return {};
}

Result<double> parse_value(std::string_view key, FigureKind kind, std::string_view text) {
  const auto refuse = [&](const char* why) -> Result<double> {
    return fail(fmt::format("trainer-stats: {}='{}' {}", key, text.substr(0, 40), why));
  };
  if (text.empty()) return refuse("has no value");
  if (kind == FigureKind::count) {
    uint64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size()) return refuse("is not a whole count");
    if (v > (uint64_t{1} << 53)) return refuse("is above 2^53");  // kMaxTrainerCount, compared exactly
    return static_cast<double>(v);
  }
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, std::chars_format::fixed);
  if (ec != std::errc() || end != text.data() + text.size()) return refuse("is not a decimal number");
  if (const auto why = out_of_range(kind, v); !why.empty()) return refuse(why.c_str());
  return v;
}

}  // namespace

Result<TrainerStats> make_trainer_stats(std::span<const std::pair<std::string, double>> figures) {
  if (figures.empty()) return fail(std::string("trainer-stats: no figures"));
  TrainerStats stats;
  for (const auto& [key, value] : figures) {
    const auto i = index_of(key);
    if (!i) return fail("trainer-stats: unknown figure '" + key.substr(0, 40) + "'");
    if (stats.figures[*i]) return fail("trainer-stats: " + key + " is named twice");
    if (const auto why = out_of_range(kTrainerFigures[*i].kind, value); !why.empty()) {
      return fail(fmt::format("trainer-stats: {}={} {}", key, value, why));
    }
    stats.figures[*i] = value;
  }
  return stats;
}

Result<TrainerStatsReport> parse_trainer_stats(std::span<const std::string> args) {
  if (args.size() < 2) {
    std::string keys;
    for (const auto& f : kTrainerFigures) keys += (keys.empty() ? "" : ", ") + std::string(f.key);
    return fail("usage: trainer-stats SLOT KEY=VALUE ... (keys: " + keys + ")");
  }
  size_t bytes = args.size() - 1;  // the spaces between the words
  for (const auto& a : args) bytes += a.size();
  if (bytes > kMaxTrainerStatsBytes) {
    return fail(fmt::format("trainer-stats: {} bytes, more than {}", bytes, kMaxTrainerStatsBytes));
  }
  TrainerStatsReport report;
  const auto& slot = args[0];
  const auto [end, ec] = std::from_chars(slot.data(), slot.data() + slot.size(), report.slot);
  if (ec != std::errc() || end != slot.data() + slot.size() || report.slot >= kMaxTrainerRanks) {
    return fail(
        fmt::format("trainer-stats: slot '{}' is not a local rank below {}", slot.substr(0, 20), kMaxTrainerRanks));
  }
  for (const auto& word : args.subspan(1)) {
    const auto eq = word.find('=');
    if (eq == std::string::npos) return fail("trainer-stats: '" + word.substr(0, 40) + "' is not KEY=VALUE");
    const std::string_view key(word.data(), eq);
    const auto i = index_of(key);
    if (!i) return fail("trainer-stats: unknown figure '" + std::string(key.substr(0, 40)) + "'");
    if (report.stats.figures[*i]) return fail("trainer-stats: " + std::string(key) + " is named twice");
    auto value = parse_value(key, kTrainerFigures[*i].kind, std::string_view(word).substr(eq + 1));
    if (!value) return fail(value.error().message);
    report.stats.figures[*i] = *value;
  }
  return report;
}

std::string encode_trainer_stats(uint32_t slot, const TrainerStats& stats) {
  std::string line = fmt::format("{} {}", kTrainerStatsRequest, slot);
  for (size_t i = 0; i < kTrainerFigureCount; ++i) {
    const auto& v = stats.figures[i];
    if (!v) continue;
    const auto& f = kTrainerFigures[i];
    switch (f.kind) {
      case FigureKind::count:
        line += fmt::format(" {}={}", f.key, static_cast<uint64_t>(*v));
        break;
      case FigureKind::seconds:
        line += fmt::format(" {}={:.3f}", f.key, *v);
        break;
      case FigureKind::fraction:
        line += fmt::format(" {}={:.6f}", f.key, *v);
        break;
    }
  }
  return line;
}

std::vector<std::string> trainer_stats_keys() {
  std::vector<std::string> keys;
  for (const auto& f : kTrainerFigures) keys.emplace_back(f.key);
  return keys;
}

}  // namespace shoal::health

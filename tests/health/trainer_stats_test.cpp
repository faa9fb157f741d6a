// The `trainer-stats` request: a trainer's run figures round-trip through one bounded line, and an unknown
// figure, a repeated one, a bad or out-of-range number, a bad slot or an oversized request is refused with a
// message that names what is wrong.
#include "health/trainer_stats.hpp"

#include <doctest/doctest.h>

#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace shoal;
using namespace shoal::health;

namespace {

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// The words after the request's name.
std::vector<std::string> args_of(const std::string& line) {
  auto w = words(line);
  REQUIRE(!w.empty());
  REQUIRE(w[0] == kTrainerStatsRequest);
  w.erase(w.begin());
  return w;
}

// Every figure at the top of its range: the longest line there is.
TrainerStats largest() {
  TrainerStats s;
  for (size_t i = 0; i < kTrainerFigureCount; ++i) {
    switch (kTrainerFigures[i].kind) {
      case FigureKind::count:
        s.figures[i] = kMaxTrainerCount;
        break;
      case FigureKind::seconds:
        s.figures[i] = kMaxTrainerSeconds;
        break;
      case FigureKind::fraction:
        s.figures[i] = 1.0;
        break;
    }
  }
  return s;
}

}  // namespace

TEST_CASE("the figures' table names each key and metric once, every metric prefixed shoal_trainer_") {
  std::set<std::string> keys, metrics;
  for (const auto& f : kTrainerFigures) {
    keys.insert(f.key);
    metrics.insert(f.metric);
    CHECK(std::string(f.metric).rfind("shoal_trainer_", 0) == 0);
  }
  CHECK(keys.size() == kTrainerFigureCount);
  CHECK(metrics.size() == kTrainerFigureCount);
  CHECK(trainer_stats_keys().front() == "steps_completed");
  CHECK(trainer_stats_keys().back() == "ettr");
}

TEST_CASE("a full report round-trips through one line within the request's bound") {
  const auto figures = std::vector<std::pair<std::string, double>>{
      {"steps_completed", 120}, {"steps_discarded", 2},    {"steps_redone", 3},   {"steps_rolled_back", 4},
      {"rebuilds", 1},          {"samples_trained", 3840}, {"startup_s", 1.25},   {"rebuild_s", 0.5},
      {"stall_s", 0.125},       {"save_s", 0.75},          {"lost_step_s", 0.25}, {"wall_s", 60},
      {"productive_s", 57.125}, {"ettr", 0.952083}};
  const auto stats = make_trainer_stats(figures);
  REQUIRE(stats.ok());
  const std::string line = encode_trainer_stats(3, *stats);
  CHECK(line.rfind("trainer-stats 3 steps_completed=120 ", 0) == 0);
  const auto back = parse_trainer_stats(args_of(line));
  REQUIRE(back.ok());
  CHECK(back->slot == 3);
  CHECK(back->stats == *stats);
  CHECK(back->stats.get(Figure::samples_trained) == 3840.0);
  CHECK(back->stats.get(Figure::ettr) == doctest::Approx(0.952083));

  // The longest report fits, with room to spare under the control socket's 1 KiB request limit.
  const std::string longest = encode_trainer_stats(kMaxTrainerRanks - 1, largest());
  const auto args = args_of(longest);
  size_t bytes = args.size() - 1;
  for (const auto& a : args) bytes += a.size();
  CHECK(bytes <= kMaxTrainerStatsBytes);
  CHECK(parse_trainer_stats(args).ok());
}

TEST_CASE("a report may carry some figures only; the others stay absent") {
  const auto r = parse_trainer_stats(std::vector<std::string>{"0", "wall_s=2.5", "steps_completed=7"});
  REQUIRE(r.ok());
  CHECK(r->stats.get(Figure::wall_s) == 2.5);
  CHECK(r->stats.get(Figure::steps_completed) == 7.0);
  CHECK_FALSE(r->stats.get(Figure::ettr).has_value());
}

TEST_CASE("malformed, unknown, repeated and out-of-range figures are refused, naming the cause") {
  struct Case {
    std::vector<std::string> args;
    const char* why;  // a part of the error message
  };
  const std::vector<Case> cases = {
      {{}, "usage: trainer-stats SLOT"},
      {{"0"}, "usage: trainer-stats SLOT"},
      {{"x", "wall_s=1"}, "slot 'x' is not a local rank"},
      {{"-1", "wall_s=1"}, "slot '-1'"},
      {{"1024", "wall_s=1"}, "below 1024"},
      {{"0", "wall_s"}, "'wall_s' is not KEY=VALUE"},
      {{"0", "speed=3"}, "unknown figure 'speed'"},
      {{"0", "=3"}, "unknown figure ''"},
      {{"0", "wall_s=1", "wall_s=2"}, "wall_s is named twice"},
      {{"0", "wall_s="}, "has no value"},
      {{"0", "steps_completed=1.5"}, "is not a whole count"},
      {{"0", "steps_completed=-1"}, "is not a whole count"},
      {{"0", "steps_completed=+1"}, "is not a whole count"},
      {{"0", "steps_completed=9007199254740993"}, "is above 2^53"},
      {{"0", "steps_completed=99999999999999999999999"}, "is not a whole count"},
      {{"0", "wall_s=-0.5"}, "is not a finite non-negative number"},
      {{"0", "wall_s=nan"}, "wall_s='nan'"},
      {{"0", "wall_s=inf"}, "wall_s='inf'"},
      {{"0", "wall_s=1e3"}, "is not a decimal number"},
      {{"0", "wall_s=1000000001"}, "is above"},
      {{"0", "wall_s=1.5x"}, "is not a decimal number"},
      {{"0", "ettr=1.01"}, "is above 1"},
      {{"0", "ettr=0.5", std::string(600, 'x')}, "more than 512"},
  };
  for (const auto& c : cases) {
    std::string shown;
    for (const auto& a : c.args) shown += a.substr(0, 40) + " ";
    CAPTURE(shown);
    const auto r = parse_trainer_stats(c.args);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find(c.why) != std::string::npos);
  }
}

TEST_CASE("figures handed in directly are held to the same table and bounds") {
  using Figures = std::vector<std::pair<std::string, double>>;
  CHECK(make_trainer_stats(Figures{{"ettr", 0.5}, {"wall_s", 3}}).ok());
  const std::vector<std::pair<Figures, const char*>> bad = {
      {{}, "no figures"},
      {{{"speed", 1}}, "unknown figure 'speed'"},
      {{{"ettr", 0.5}, {"ettr", 0.5}}, "ettr is named twice"},
      {{{"ettr", 1.5}}, "is above 1"},
      {{{"rebuilds", 0.5}}, "is not a whole count"},
      {{{"rebuilds", 1e17}}, "is above"},
      {{{"stall_s", -1}}, "is not a finite non-negative number"},
      {{{"stall_s", std::numeric_limits<double>::quiet_NaN()}}, "is not a finite non-negative number"},
      {{{"stall_s", std::numeric_limits<double>::infinity()}}, "is not a finite non-negative number"},
  };
  for (const auto& [figures, why] : bad) {
    CAPTURE(why);
    const auto r = make_trainer_stats(figures);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find(why) != std::string::npos);
  }
}

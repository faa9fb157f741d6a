// The straggler rule as a table of scenarios: uniform slowdown, one slow host, noise, missing data,
// recovery, two hosts, several ranks per host, and the options' bounds.
#include "health/straggler_judge.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

using shoal::StragglerOptions;
using shoal::health::StepFigure;
using shoal::health::StragglerJudge;

namespace {

const std::vector<std::string> kSix = {"a", "b", "c", "d", "e", "f"};

// One exchange of `steps` steps where host i computes compute_ms[i] (and waits for the slowest).
std::vector<std::vector<StepFigure>> exchange(const std::vector<double>& compute_ms, int steps = 5) {
  double slowest = 0;
  for (double c : compute_ms) slowest = std::max(slowest, c);
  std::vector<std::vector<StepFigure>> out(compute_ms.size());
  for (size_t i = 0; i < compute_ms.size(); ++i) {
    for (int s = 0; s < steps; ++s) {
      out[i].push_back(
          {static_cast<uint32_t>(compute_ms[i] * 1000), static_cast<uint32_t>((slowest - compute_ms[i]) * 1000)});
    }
  }
  return out;
}

// Runs `rounds` exchanges of the figures `make(round)` gives and returns the stragglers after each.
template <class Make>
std::vector<std::vector<std::string>> run(StragglerJudge& judge, int rounds, const Make& make) {
  std::vector<std::vector<std::string>> verdicts;
  for (int r = 0; r < rounds; ++r)
    verdicts.push_back(judge.evaluate(make(r), static_cast<uint64_t>(r * 5 + 4)).stragglers);
  return verdicts;
}

}  // namespace

TEST_CASE("a uniformly slow job has no straggler, however slow") {
  StragglerJudge judge(StragglerOptions{});
  judge.reset(kSix, 1);
  const auto verdicts = run(judge, 20, [](int r) { return exchange(std::vector<double>(6, r < 10 ? 100.0 : 300.0)); });
  for (const auto& v : verdicts) CHECK(v.empty());
}

TEST_CASE("one host 30% slower is named after raise_after evaluations, and only that one") {
  StragglerJudge judge(StragglerOptions{});
  judge.reset(kSix, 1);
  const auto verdicts = run(judge, 6, [](int) { return exchange({100, 100, 130, 100, 100, 100}); });
  CHECK(verdicts[0].empty());  // one evaluation above is not enough (raise_after 2)
  for (size_t i = 1; i < verdicts.size(); ++i) CHECK(verdicts[i] == std::vector<std::string>{"c"});
  const auto& h = judge.health();
  REQUIRE(h.hosts.size() == 6);
  CHECK(h.hosts[2].straggler);
  CHECK(h.hosts[2].compute_ms == doctest::Approx(130));
  CHECK(h.hosts[0].wait_ms == doctest::Approx(30));
  CHECK(h.hosts[2].wait_ms == doctest::Approx(0));
  CHECK(h.hosts[0].samples == 10);
}

TEST_CASE("a host that slows down mid-run is named within 20 steps of the slowdown") {
  StragglerJudge judge(StragglerOptions{});
  judge.reset(kSix, 1);
  // Exchanges every 5 steps; host b slows down at step 20 (the fifth exchange).
  int named_at = -1;
  for (int r = 0; r < 12 && named_at < 0; ++r) {
    const auto v = judge.evaluate(exchange({100, r >= 4 ? 130.0 : 100.0, 100, 100, 100, 100}), uint64_t(r * 5 + 4));
    if (!v.stragglers.empty()) {
      CHECK(v.stragglers == std::vector<std::string>{"b"});
      named_at = r * 5 + 4;
    }
  }
  REQUIRE(named_at >= 0);
  CHECK(named_at - 20 < 20);
}

TEST_CASE("a host that recovers is cleared, after clear_after evaluations below clear_factor") {
  StragglerJudge judge(StragglerOptions{});
  judge.reset(kSix, 1);
  const auto verdicts = run(judge, 12, [](int r) {
    return exchange({100, 100, 100, 100, r < 4 ? 150.0 : 100.0, 100});
  });
  CHECK(verdicts[3] == std::vector<std::string>{"e"});
  // Recovery at round 4: the window (10 steps) still holds slow figures for one more round.
  bool cleared = false;
  for (size_t i = 4; i < verdicts.size(); ++i) cleared = cleared || verdicts[i].empty();
  CHECK(cleared);
  CHECK(verdicts.back().empty());
}

TEST_CASE("noisy timings of equal hosts never name anyone, and a named host in the band does not flap") {
  std::mt19937 rng(20261126);  // seed stated: the noise replays exactly
  std::normal_distribution<double> noise(0.0, 6.0);
  std::uniform_real_distribution<double> spike(0.0, 1.0);
  StragglerJudge judge(StragglerOptions{});
  judge.reset(kSix, 1);
  for (int r = 0; r < 1000; ++r) {
    std::vector<std::vector<StepFigure>> figs(6);
    for (size_t h = 0; h < 6; ++h) {
      for (int s = 0; s < 5; ++s) {
        // 100 ms +- 6 ms, with one step in twenty stretched to 200 ms (a page fault storm, a GC pause).
        double c = 100 + noise(rng);
        if (spike(rng) < 0.05) c = 200;
        figs[h].push_back({static_cast<uint32_t>(std::max(0.0, c) * 1000), 1000});
      }
    }
    INFO("round " << r);
    REQUIRE(judge.evaluate(figs, uint64_t(r * 5 + 4)).stragglers.empty());
  }
  // A host hovering between clear_factor and factor (1.15 x, noisy) once named stays named: no flapping.
  StragglerJudge band(StragglerOptions{});
  band.reset(kSix, 1);
  for (int r = 0; r < 3; ++r) band.evaluate(exchange({100, 100, 100, 100, 100, 140}), uint64_t(r));
  REQUIRE(band.health().stragglers == std::vector<std::string>{"f"});
  int changes = 0;
  bool named = true;
  for (int r = 0; r < 500; ++r) {
    std::vector<std::vector<StepFigure>> figs(6);
    for (size_t h = 0; h < 6; ++h) {
      for (int s = 0; s < 5; ++s) {
        const double c = (h == 5 ? 115.0 : 100.0) + noise(rng) / 3;
        figs[h].push_back({static_cast<uint32_t>(c * 1000), 0});
      }
    }
    const bool now = !band.evaluate(figs, uint64_t(r)).stragglers.empty();
    changes += now != named ? 1 : 0;
    named = now;
  }
  CHECK(changes == 0);
}

TEST_CASE("a host without figures is not slow, and nobody is judged against nobody") {
  StragglerJudge judge(StragglerOptions{});
  judge.reset(kSix, 1);
  // Host d reports nothing at all; host a reports too few figures for its window (min_samples 5).
  for (int r = 0; r < 5; ++r) {
    auto figs = exchange({100, 100, 100, 100, 100, 100});
    figs[3].clear();
    figs[0].resize(r == 0 ? 2 : 0);
    const auto& h = judge.evaluate(figs, uint64_t(r));
    CHECK(h.stragglers.empty());
    CHECK(h.hosts[3].samples == 0);
    CHECK_FALSE(h.hosts[3].straggler);
  }
  // A named host that stops reporting is cleared once its window has no data: no data is not slowness.
  StragglerJudge quiet(StragglerOptions{});
  quiet.reset({"x", "y", "z"}, 1);
  for (int r = 0; r < 3; ++r) quiet.evaluate(exchange({100, 100, 200}), uint64_t(r));
  REQUIRE(quiet.health().stragglers == std::vector<std::string>{"z"});
  StragglerOptions one;
  one.window_steps = 5;
  StragglerJudge quiet5(one);
  quiet5.reset({"x", "y", "z"}, 1);
  for (int r = 0; r < 3; ++r) quiet5.evaluate(exchange({100, 100, 200}), uint64_t(r));
  REQUIRE(quiet5.health().stragglers == std::vector<std::string>{"z"});
  // The window keeps the last 5 figures: z stays named on old figures only while they are its window.
  auto figs = exchange({100, 100, 100});
  figs[2].clear();
  CHECK(quiet5.evaluate(figs, 99).stragglers == std::vector<std::string>{"z"});
  quiet5.reset({"x", "y", "z"}, 2);
  CHECK(quiet5.evaluate(figs, 104).stragglers.empty());
  // A single host has nobody to be slower than.
  StragglerJudge alone(StragglerOptions{});
  alone.reset({"solo"}, 1);
  for (int r = 0; r < 5; ++r) CHECK(alone.evaluate(exchange({500}), uint64_t(r)).stragglers.empty());
}

TEST_CASE("two hosts: the median is their mean, so only a host 1.5x slower than the other is named, never both") {
  StragglerJudge judge(StragglerOptions{});
  judge.reset({"p", "q"}, 1);
  CHECK(run(judge, 4, [](int) { return exchange({100, 130}); }).back().empty());
  judge.reset({"p", "q"}, 2);
  CHECK(run(judge, 4, [](int) { return exchange({100, 160}); }).back() == std::vector<std::string>{"q"});
}

TEST_CASE("one unusually fast host does not make the others stragglers") {
  StragglerJudge judge(StragglerOptions{});
  judge.reset({"a", "b", "c"}, 1);
  for (const auto& v : run(judge, 6, [](int) { return exchange({100, 100, 20}); })) CHECK(v.empty());
}

TEST_CASE("differences under min_excess_ms are noise, whatever the ratio") {
  StragglerJudge judge(StragglerOptions{});
  judge.reset(kSix, 1);
  // 0.1 ms steps against 0.5 ms: 5x slower, 0.4 ms apart.
  const auto verdicts = run(judge, 6, [](int) { return exchange({0.1, 0.1, 0.1, 0.5, 0.1, 0.1}); });
  for (const auto& v : verdicts) CHECK(v.empty());
}

TEST_CASE("a host of several ranks computes as slowly as its slowest rank") {
  using shoal::health::DecodedRecord;
  const std::vector<std::string> hosts = {"h1", "h2"};
  const std::vector<std::string> rank_hosts = {"h1", "h1", "h2", "h2"};
  std::vector<DecodedRecord> records(4);
  records[0].steps = {{100, 50}, {100, 50}};
  records[1].steps = {{150, 10}, {90, 60}};
  records[2].steps = {{100, 40}};
  records[3].refused = true;
  records[3].steps = {{999, 999}};
  const auto figs = shoal::health::host_figures(hosts, rank_hosts, records);
  REQUIRE(figs.size() == 2);
  CHECK(figs[0] == std::vector<StepFigure>{{150, 10}, {100, 50}});
  CHECK(figs[1] == std::vector<StepFigure>{{100, 40}});
}

TEST_CASE("the options are checked: factors, windows and the exchange period within bounds") {
  using shoal::health::check_rule;
  CHECK_FALSE(check_rule(StragglerOptions{}).has_value());
  StragglerOptions o;
  o.factor = 1.0;
  CHECK(check_rule(o).has_value());
  o = {};
  o.clear_factor = 1.5;
  CHECK(check_rule(o).has_value());
  o = {};
  o.min_samples = 11;
  CHECK(check_rule(o).has_value());
  o = {};
  o.exchange_every = 9;
  CHECK(check_rule(o).has_value());
  o = {};
  o.exchange_every = 0;  // off
  CHECK_FALSE(check_rule(o).has_value());
  o = {};
  o.factor = std::numeric_limits<double>::quiet_NaN();
  CHECK(check_rule(o).has_value());
}

TEST_CASE("the median of an even count is the mean of the middle two; of nothing, 0") {
  using shoal::health::median;
  CHECK(median({}) == 0);
  CHECK(median({3}) == 3);
  CHECK(median({4, 1, 3, 2}) == 2.5);
  CHECK(median({5, 1, 3}) == 3);
}

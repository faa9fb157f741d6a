// The straggler verdict: a pure, deterministic function of the timing figures every rank of a view holds
// after each exchange, so every rank (and through it every agent) reaches the same verdict with no
// master. The rule is StragglerOptions' (include/shoal/health.hpp):
//   - per host, the median compute and wait over its last window_steps figures; fewer than min_samples
//     figures: no data, never a straggler;
//   - the reference is the job's median: the median of every host's median (those with data, at least
//     two), so a job slowed down as a whole has no straggler and one unusually fast host does not make
//     the others slow (with two hosts it is their mean: a host is named only above 1.5x the other);
//   - above: median > factor x reference and median - reference > min_excess_ms; named after raise_after
//     consecutive evaluations above;
//   - below: median <= clear_factor x reference or median - reference <= min_excess_ms; cleared after
//     clear_after consecutive evaluations below. Between the two thresholds nothing changes (hysteresis).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "health/step_record.hpp"
#include "shoal/health.hpp"

namespace shoal::health {

// Why `rule` cannot be used, or nullopt when it can.
std::optional<std::string> check_rule(const StragglerOptions& rule);

// Each host's figures of one exchange from its ranks' records: `rank_hosts[r]` names rank r's host and
// `records[r]` is its decoded record. A host of several ranks (GPU slots) computes as slowly as its slowest
// rank: step i of the host is the largest compute and the smallest wait of its ranks' step i.
std::vector<std::vector<StepFigure>> host_figures(std::span<const std::string> hosts,
                                                  std::span<const std::string> rank_hosts,
                                                  std::span<const DecodedRecord> records);

// The median of `values` (the mean of the two middle ones for an even count); 0 when empty.
double median(std::vector<double> values);

class StragglerJudge {
 public:
  // `rule` must pass check_rule.
  explicit StragglerJudge(const StragglerOptions& rule);

  // Starts afresh for the hosts of a view (in rank order): every figure and verdict is forgotten.
  void reset(std::vector<std::string> hosts, uint64_t epoch);
  // One exchange: `figures[i]` are host i's steps since the previous one (hosts as given to reset; a
  // missing or empty entry adds nothing). `step` is the last step it covers. Returns the new verdict.
  const JobHealth& evaluate(std::span<const std::vector<StepFigure>> figures, uint64_t step);
  // Adds refused records and dropped figures to the counts the verdict reports.
  void count_dropped(uint64_t records, uint64_t figures);
  // Adds records whose tag did not verify (health/record_seal.hpp) to the counts the verdict reports.
  void count_forged(uint64_t records);
  // Whether the figures are verified under the cluster key (reported in the verdict).
  void set_authenticated(bool authenticated) { health_.authenticated = authenticated; }

  const JobHealth& health() const { return health_; }

 private:
  struct HostState {
    std::deque<StepFigure> window;
    uint32_t above = 0;  // consecutive evaluations above the factor (while not named)
    uint32_t below = 0;  // consecutive evaluations below clear_factor (while named)
    bool straggler = false;
  };

  StragglerOptions rule_;
  std::vector<std::string> hosts_;
  std::vector<HostState> state_;
  JobHealth health_;
};

}  // namespace shoal::health

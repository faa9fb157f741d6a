// The straggler rule (see straggler_judge.hpp): windows, medians against the others' median, hysteresis.
#include "health/straggler_judge.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace shoal::health {

std::optional<std::string> check_rule(const StragglerOptions& r) {
  const auto finite = [](double v) { return std::isfinite(v); };
  if (!finite(r.factor) || r.factor <= 1.0 || r.factor > 100.0) return "factor must be above 1 (and at most 100)";
  if (!finite(r.clear_factor) || r.clear_factor < 1.0 || r.clear_factor > r.factor)
    return "clear_factor must lie between 1 and factor";
  if (!finite(r.min_excess_ms) || r.min_excess_ms < 0 || r.min_excess_ms > 3.6e6)
    return "min_excess_ms must lie between 0 and an hour";
  if (r.window_steps < 1 || r.window_steps > 1000) return "window_steps must lie between 1 and 1000";
  if (r.min_samples < 1 || r.min_samples > r.window_steps) return "min_samples must lie between 1 and window_steps";
  if (r.raise_after < 1 || r.raise_after > 1000) return "raise_after must lie between 1 and 1000";
  if (r.clear_after < 1 || r.clear_after > 1000) return "clear_after must lie between 1 and 1000";
  if (r.exchange_every > kRecordSteps) return "exchange_every must be at most " + std::to_string(kRecordSteps);
  return std::nullopt;
}

std::vector<std::vector<StepFigure>> host_figures(std::span<const std::string> hosts,
                                                  std::span<const std::string> rank_hosts,
                                                  std::span<const DecodedRecord> records) {
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < hosts.size(); ++i) index.emplace(hosts[i], i);
  std::vector<std::vector<StepFigure>> out(hosts.size());
  std::vector<bool> seen(hosts.size(), false);
  for (size_t r = 0; r < rank_hosts.size() && r < records.size(); ++r) {
    const auto it = index.find(rank_hosts[r]);
    if (it == index.end() || records[r].refused) continue;
    auto& mine = out[it->second];
    const auto& theirs = records[r].steps;
    if (!seen[it->second]) {
      mine = theirs;
      seen[it->second] = true;
      continue;
    }
    for (size_t i = 0; i < theirs.size(); ++i) {
      if (i >= mine.size()) {
        mine.push_back(theirs[i]);
      } else {
        mine[i].compute_us = std::max(mine[i].compute_us, theirs[i].compute_us);
        mine[i].wait_us = std::min(mine[i].wait_us, theirs[i].wait_us);
      }
    }
  }
  return out;
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

StragglerJudge::StragglerJudge(const StragglerOptions& rule) : rule_(rule) { health_.rule = rule; }

void StragglerJudge::reset(std::vector<std::string> hosts, uint64_t epoch) {
  hosts_ = std::move(hosts);
  state_.assign(hosts_.size(), HostState{});
  health_.epoch = epoch;
  health_.step = 0;
  health_.evaluations = 0;
  health_.hosts.clear();
  for (const auto& h : hosts_) health_.hosts.push_back(HostHealth{h, 0, 0, 0, false});
  health_.stragglers.clear();
}

void StragglerJudge::count_dropped(uint64_t records, uint64_t figures) {
  health_.dropped_records += records;
  health_.dropped_figures += figures;
}

void StragglerJudge::count_forged(uint64_t records) { health_.forged_records += records; }

const JobHealth& StragglerJudge::evaluate(std::span<const std::vector<StepFigure>> figures, uint64_t step) {
  const size_t n = hosts_.size();
  for (size_t i = 0; i < n && i < figures.size(); ++i) {
    auto& w = state_[i].window;
    for (const auto& f : figures[i]) w.push_back(f);
    while (w.size() > rule_.window_steps) w.pop_front();
  }
  // Each host's medians; only hosts with enough figures count.
  std::vector<bool> has_data(n, false);
  std::vector<double> compute_ms(n, 0), wait_ms(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const auto& w = state_[i].window;
    if (w.size() < rule_.min_samples) continue;
    std::vector<double> c, x;
    for (const auto& f : w) {
      c.push_back(static_cast<double>(f.compute_us) / 1000.0);
      x.push_back(static_cast<double>(f.wait_us) / 1000.0);
    }
    has_data[i] = true;
    compute_ms[i] = median(std::move(c));
    wait_ms[i] = median(std::move(x));
  }
  // The job's median: over every host with data, this one included, so that a job slowed down as a whole has
  // no straggler and one unusually fast host does not make the others look slow.
  std::vector<double> with_data;
  for (size_t i = 0; i < n; ++i) {
    if (has_data[i]) with_data.push_back(compute_ms[i]);
  }
  const double reference = median(with_data);
  for (size_t i = 0; i < n; ++i) {
    auto& s = state_[i];
    if (!has_data[i] || with_data.size() < 2) {
      // No data is not slowness; nobody to compare with is no verdict.
      s.above = s.below = 0;
      s.straggler = false;
      continue;
    }
    const double excess = compute_ms[i] - reference;
    const bool above = compute_ms[i] > rule_.factor * reference && excess > rule_.min_excess_ms;
    const bool below = compute_ms[i] <= rule_.clear_factor * reference || excess <= rule_.min_excess_ms;
    if (!s.straggler) {
      s.above = above ? s.above + 1 : 0;
      if (s.above >= rule_.raise_after) {
        s.straggler = true;
        s.above = 0;
        s.below = 0;
      }
    } else {
      s.below = below ? s.below + 1 : 0;
      if (s.below >= rule_.clear_after) {
        s.straggler = false;
        s.above = 0;
        s.below = 0;
      }
    }
  }
  health_.step = step;
  ++health_.evaluations;
  health_.hosts.clear();
  health_.stragglers.clear();
  for (size_t i = 0; i < n; ++i) {
    health_.hosts.push_back(HostHealth{hosts_[i], compute_ms[i], wait_ms[i],
                                       static_cast<uint32_t>(state_[i].window.size()), state_[i].straggler});
    if (state_[i].straggler) health_.stragglers.push_back(hosts_[i]);
  }
  return health_;
}

}  // namespace shoal::health

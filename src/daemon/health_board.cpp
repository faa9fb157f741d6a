// The agent's copy of the straggler verdict, and its log line per change.
#include "daemon/health_board.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "base/log.hpp"

namespace shoal::daemon {
namespace {

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

std::string describe_change(const std::vector<std::string>& before, const JobHealth& now) {
  if (now.stragglers.empty()) {
    return fmt::format("node health: no straggler any more (was {}) at step {} of epoch {}", join(before), now.step,
                       now.epoch);
  }
  std::vector<double> with_data;
  for (const auto& h : now.hosts) {
    if (h.samples > 0) with_data.push_back(h.compute_ms);
  }
  std::sort(with_data.begin(), with_data.end());
  const size_t mid = with_data.size() / 2;
  const double job = with_data.empty()      ? 0
                     : with_data.size() % 2 ? with_data[mid]
                                            : (with_data[mid - 1] + with_data[mid]) / 2;
  std::string detail;
  for (const auto& h : now.hosts) {
    if (!h.straggler) continue;
    detail += fmt::format("{}{} computes {:.1f} ms per step against the job's median {:.1f} ms (waits {:.1f} ms)",
                          detail.empty() ? "" : "; ", h.name, h.compute_ms, job, h.wait_ms);
  }
  return fmt::format("node health: straggler(s) {} at step {} of epoch {} (was {}): {}", join(now.stragglers), now.step,
                     now.epoch, before.empty() ? "none" : join(before), detail);
}

void HealthBoard::update(JobHealth health, Clock::time_point now) {
  const std::vector<std::string> before = latest_ ? latest_->stragglers : std::vector<std::string>{};
  if (health.stragglers != before) {
    ++changes_;
    auto& logger = log::get(log::Component::agent);
    if (health.stragglers.empty()) {
      logger.info("{}", describe_change(before, health));
    } else {
      logger.warn("{}", describe_change(before, health));
    }
  }
  latest_ = std::move(health);
  received_ = now;
  ++reports_;
}

std::optional<double> HealthBoard::age_s(Clock::time_point now) const {
  if (!latest_) return std::nullopt;
  return std::chrono::duration<double>(now - received_).count();
}

}  // namespace shoal::daemon

// What the local trainers' runs lost: the `trainer-stats` request (health/trainer_stats.hpp), and each local
// rank's latest report in the metrics (shoal_trainer_*, by rank).
#include <algorithm>
#include <boost/asio/post.hpp>

#include "base/log.hpp"
#include "control/replies/errors_and_acks.hpp"
#include "daemon/agent.hpp"
#include "daemon/reports/metrics_text.hpp"

namespace shoal::daemon {

uint32_t Agent::trainer_ranks() const {
  return std::min(std::max<uint32_t>(cfg_.meta.slots, 1), health::kMaxTrainerRanks);
}

void Agent::serve_trainer_requests() {
  control_handlers_.add(
      health::kTrainerStatsRequest,
      "what a local trainer's run lost so far (steps discarded, redone, rolled back; seconds lost; ETTR): "
      "trainer-stats SLOT KEY=VALUE ...",
      [this](std::span<const std::string> args) { return trainer_stats_reply(args); }, control::Access::local);
}

void Agent::report_trainer_stats(uint32_t slot, health::TrainerStats stats) {
  asio::post(io_, [this, slot, stats = std::move(stats)]() mutable {
    if (slot < trainer_ranks()) trainers_.update(slot, std::move(stats), std::chrono::steady_clock::now());
  });
}

std::string Agent::trainer_stats_reply(std::span<const std::string> args) {
  const auto refuse = [&](const std::string& why) {
    ++trainer_stats_refused_;
    if (const auto held = trainer_stats_warn_.admit("trainer-stats", std::chrono::steady_clock::now())) {
      log::get(log::Component::agent)
          .warn("a local trainer's run figures refused: {} ({} refused in all; {} such warning(s) held back)", why,
                trainer_stats_refused_, *held);
    }
    return control_handlers_.error_reply(why);
  };
  auto report = health::parse_trainer_stats(args);
  if (!report) return refuse(report.error().message);
  if (report->slot >= trainer_ranks()) {
    return refuse("trainer-stats: slot " + std::to_string(report->slot) + " does not exist here (" +
                  std::to_string(trainer_ranks()) + " slot(s))");
  }
  trainers_.update(report->slot, std::move(report->stats), std::chrono::steady_clock::now());
  return control::write_reply(control::CommittedReply{true});
}

void Agent::trainer_metrics(PromText& m) const {
  const auto now = std::chrono::steady_clock::now();
  for (size_t i = 0; i < health::kTrainerFigureCount; ++i) {
    const auto& f = health::kTrainerFigures[i];
    for (const auto& [slot, e] : trainers_.ranks()) {
      if (const auto& v = e.stats.figures[i]) {
        m.gauge(f.metric, std::string(f.help) + ", as the trainer of this local rank last reported it", *v,
                {{"rank", std::to_string(slot)}});
      }
    }
  }
  for (const auto& [slot, e] : trainers_.ranks()) {
    m.gauge("shoal_trainer_report_age_seconds", "seconds since the trainer of this local rank last reported its run",
            std::chrono::duration<double>(now - e.received).count(), {{"rank", std::to_string(slot)}});
  }
  m.counter("shoal_trainer_reports_total", "trainer-stats reports taken from local trainers",
            static_cast<double>(trainers_.reports()));
  m.counter("shoal_trainer_reports_refused_total",
            "trainer-stats reports refused (malformed, an unknown figure, a value out of range, no such slot)",
            static_cast<double>(trainer_stats_refused_));
}

}  // namespace shoal::daemon

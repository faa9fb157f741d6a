// Per-step timing, the figures' exchange on the job's communicator, and the verdict it feeds.
#include "session/step_health.hpp"

#include <algorithm>

#include "base/log.hpp"
#include "comm_wrap/timed_communicator.hpp"
#include "shoal/errors.hpp"

namespace shoal::session {
namespace {

uint64_t waited_ns(Communicator& comm) {
  const auto* timed = dynamic_cast<const comm::TimedCommunicator*>(&comm);
  return timed ? timed->waited_ns() : 0;
}

StragglerOptions checked(const StragglerOptions& rule) {
  if (auto why = health::check_rule(rule)) throw Error("ElasticLoop: bad straggler options: " + *why);
  return rule;
}

}  // namespace

StepHealth::StepHealth(const StragglerOptions& rule) : rule_(checked(rule)), judge_(rule_) {}

void StepHealth::restart(std::vector<std::string> rank_hosts, uint64_t epoch) {
  rank_hosts_ = std::move(rank_hosts);
  hosts_.clear();
  for (const auto& h : rank_hosts_) {
    if (std::find(hosts_.begin(), hosts_.end(), h) == hosts_.end()) hosts_.push_back(h);
  }
  judge_.reset(hosts_, epoch);
  pending_.clear();
  began_.reset();
}

void StepHealth::step_began(Communicator& comm) {
  if (!enabled()) return;
  began_ = Clock::now();
  waited_at_begin_ns_ = waited_ns(comm);
}

void StepHealth::step_ended(Communicator& comm) {
  if (!enabled() || !began_) return;
  const auto total_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - *began_).count();
  began_.reset();
  const auto wait_ns =
      static_cast<int64_t>(std::min<uint64_t>(waited_ns(comm) - waited_at_begin_ns_, static_cast<uint64_t>(total_ns)));
  if (pending_.size() >= health::kRecordSteps) pending_.erase(pending_.begin());  // keep the newest
  pending_.push_back({health::figure_us(total_ns - wait_ns), health::figure_us(wait_ns)});
}

bool StepHealth::exchange_if_due(Communicator& comm, uint64_t step) {
  if (!enabled() || (step + 1) % rule_.exchange_every != 0) return false;
  const auto mine = health::encode_record(pending_);
  pending_.clear();
  const auto world = static_cast<size_t>(comm.world_size());
  std::vector<std::byte> all(world * health::kRecordBytes);
  comm.allgather(std::span<const std::byte>(mine), std::span<std::byte>(all));
  std::vector<health::DecodedRecord> records;
  uint64_t refused = 0, dropped = 0;
  for (size_t r = 0; r < world; ++r) {
    records.push_back(
        health::decode_record(std::span<const std::byte>(all).subspan(r * health::kRecordBytes, health::kRecordBytes)));
    refused += records.back().refused ? 1 : 0;
    dropped += records.back().dropped;
  }
  if (refused + dropped > 0) {
    judge_.count_dropped(refused, dropped);
    if (const auto held = warn_limiter_.admit("dropped", Clock::now())) {
      log::get(log::Component::comm)
          .warn(
              "node health: {} timing record(s) refused and {} figure(s) out of range dropped at step {} ({} "
              "in all; {} such warning(s) held back)",
              refused, dropped, step, judge_.health().dropped_records + judge_.health().dropped_figures, *held);
    }
  }
  const auto figures = health::host_figures(hosts_, rank_hosts_, records);
  judge_.evaluate(figures, step);
  return true;
}

}  // namespace shoal::session

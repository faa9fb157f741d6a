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

void StepHealth::restart(std::vector<std::string> rank_hosts, uint64_t epoch, uint32_t attempt,
                         std::shared_ptr<const wire::KeyRing> keys) {
  rank_hosts_ = std::move(rank_hosts);
  epoch_ = epoch;
  attempt_ = attempt;
  keys_ = std::move(keys);
  hosts_.clear();
  for (const auto& h : rank_hosts_) {
    if (std::find(hosts_.begin(), hosts_.end(), h) == hosts_.end()) hosts_.push_back(h);
  }
  judge_.reset(hosts_, epoch);
  judge_.set_authenticated(keys_ != nullptr);
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
  const auto world = static_cast<size_t>(comm.world_size());
  health::RecordPlace place{epoch_, attempt_, step, static_cast<uint32_t>(comm.rank()), static_cast<uint32_t>(world)};
  const auto mine = health::seal_record(health::encode_record(pending_), keys_.get(), place);
  pending_.clear();
  std::vector<std::byte> all(world * health::kSealedRecordBytes);
  comm.allgather(std::span<const std::byte>(mine), std::span<std::byte>(all));
  std::vector<health::DecodedRecord> records;
  uint64_t refused = 0, dropped = 0, forged = 0;
  for (size_t r = 0; r < world; ++r) {
    place.rank = static_cast<uint32_t>(r);
    const auto opened = health::open_record(
        std::span<const std::byte>(all).subspan(r * health::kSealedRecordBytes, health::kSealedRecordBytes),
        keys_.get(), place);
    if (opened.trust == health::RecordTrust::forged) {
      // Not this cluster's: nothing in it is used (no figure of that rank this time), never judged.
      health::DecodedRecord none;
      none.refused = true;
      records.push_back(std::move(none));
      ++forged;
      continue;
    }
    records.push_back(health::decode_record(opened.record));
    refused += records.back().refused ? 1 : 0;
    dropped += records.back().dropped;
  }
  if (refused + dropped > 0) judge_.count_dropped(refused, dropped);
  if (forged > 0) judge_.count_forged(forged);
  if (refused + dropped + forged > 0) {
    if (const auto held = warn_limiter_.admit("dropped", Clock::now())) {
      log::get(log::Component::comm)
          .warn(
              "node health: {} timing record(s) whose cluster-key tag did not verify, {} refused and {} "
              "figure(s) out of range dropped at step {} ({} in all; {} such warning(s) held back)",
              forged, refused, dropped, step,
              judge_.health().forged_records + judge_.health().dropped_records + judge_.health().dropped_figures,
              *held);
    }
  }
  const auto figures = health::host_figures(hosts_, rank_hosts_, records);
  judge_.evaluate(figures, step);
  return true;
}

}  // namespace shoal::session

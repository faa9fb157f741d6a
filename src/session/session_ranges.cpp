// Ranged restores on the trainer's side: the collective agreement on a step, then non-collective reads
// of any saved rank's version, whole tables or byte ranges, local memory first, then its holders.
#include "base/log.hpp"
#include "session/range_reading.hpp"
#include "session/session_checkpoints.hpp"
#include "shoal/errors.hpp"

namespace shoal::session {

std::optional<RestorePoint> SessionCheckpoints::agree(Communicator& comm, uint32_t attempt,
                                                      comm::RendezvousStore& store,
                                                      std::span<const ckpt::ExpectedHolder> expected,
                                                      uint64_t at_most_step) {
  const uint64_t call = next_restore_call(comm, attempt);
  const std::string prefix = "ckpt/" + std::to_string(call) + "/agree/";
  auto reports = collect_reports(comm, store, prefix, expected);
  // Every rank computes the same choice from the same reports (in rank order).
  auto choice = ckpt::choose_restore(reports, at_most_step);
  std::lock_guard lock(mu_);
  if (!choice) {
    agreed_.reset();
    log::ckpt().info("ckpt: no checkpoint step{} is complete for a ranged restore",
                     at_most_step == UINT64_MAX ? std::string() : " at or below " + std::to_string(at_most_step));
    return std::nullopt;
  }
  agreed_ = Agreed{choice->step, std::move(reports), std::move(choice->holders)};
  return RestorePoint{choice->step, choice->world};
}

std::pair<ckpt::VersionInfo, std::string> SessionCheckpoints::read_version_ranges(
    uint64_t step, uint32_t saved_rank, const std::vector<ByteRange>& ranges) {
  const std::string what = "rank " + std::to_string(saved_rank) + "'s version of step " + std::to_string(step);
  const RangedRead read{ctx_.job, saved_rank, step, &ranges};
  std::vector<std::string> refusals;
  std::vector<std::string> misses;
  const auto settle = [&](RangedResult& r, const std::string& source) -> bool {
    if (r.outcome == RangedOutcome::read) return true;
    if (r.outcome == RangedOutcome::bad_request) throw Error("read of " + what + ": " + r.message);
    if (r.outcome == RangedOutcome::refused) {
      const uint64_t n = ranged_refused_.fetch_add(1, std::memory_order_relaxed) + 1;
      std::lock_guard lock(mu_);
      if (auto held = warn_.admit("ranged", log::WarnLimiter::Clock::now())) {
        log::ckpt().warn("ckpt: refused {}'s copy of {}: {} ({} refused so far{})", source, what, r.message, n,
                         *held ? ", " + std::to_string(*held) + " warnings held back" : std::string());
      }
      refusals.push_back(source + ": " + r.message);
    } else if (!r.message.empty()) {
      misses.push_back(source + ": " + r.message);
    }
    return false;
  };
  auto local = read_ranges_local(read, segment_store());
  if (settle(local, "this host")) return {std::move(*local.info), "local"};
  std::vector<std::pair<ckpt::HolderReport, uint64_t>> holders;  // report, promised bytes
  {
    std::lock_guard lock(mu_);
    if (agreed_ && agreed_->step == step && saved_rank < agreed_->holders.size()) {
      for (const size_t h : agreed_->holders[saved_rank]) {
        holders.emplace_back(agreed_->reports[h], ckpt::promised_bytes(agreed_->reports, saved_rank, step, h));
      }
    }
  }
  for (const auto& [report, promised] : holders) {
    if (report.address == ctx_.agent_addr) continue;  // this host: looked at already
    auto r = read_ranges_peer(read, ckpt_service::TransferPeer{report.address, ctx_.ckpt_hello}, promised);
    if (settle(r, report.holder)) return {std::move(*r.info), report.holder};
  }
  const auto join = [](const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v) out += (out.empty() ? "" : "; ") + s;
    return out;
  };
  if (!refusals.empty()) {
    throw VersionRefused("every copy of " + what + " found failed verification (" + join(refusals) + ")");
  }
  throw Error("no host gives " + what + (holders.empty() ? " (agree_restore did not settle on that step)" : "") +
              (misses.empty() ? std::string() : " (" + join(misses) + ")"));
}

std::vector<RestoredCheckpoint::Entry> SessionCheckpoints::version_buffers(uint64_t step, uint32_t saved_rank) {
  const auto [info, source] = read_version_ranges(step, saved_rank, {});
  std::vector<RestoredCheckpoint::Entry> out;
  for (const auto& b : info.buffers) out.push_back({b.name, b.offset, b.size});
  return out;
}

std::string SessionCheckpoints::read_ranges(uint64_t step, uint32_t saved_rank, const std::vector<ByteRange>& ranges) {
  return read_version_ranges(step, saved_rank, ranges).second;
}

}  // namespace shoal::session

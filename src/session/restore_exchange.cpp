// The restore's exchanges through the epoch's rendezvous store: one report per host, the plan rank 0
// makes of them (one value per host, naming each of its ranks' parts), and rank 0's verdict on the loads.
// O(ranks) bytes in all: only rank 0 reads every host's report and every rank's outcome.
#include <charconv>

#include "base/log.hpp"
#include "ckpt.pb.h"
#include "ckpt_shm/held_scan.hpp"
#include "ckpt_shm/restore_plan.hpp"
#include "session/restore_plan_value.hpp"
#include "session/session_checkpoints.hpp"
#include "shoal/errors.hpp"

namespace shoal::session {
namespace {

// report_writers for a communicator of `world` ranks: a rank the view does not place writes its own.
std::vector<uint32_t> writers_for(std::span<const ckpt::ExpectedHolder> expected, size_t world) {
  auto writers = ckpt::report_writers(expected);
  writers.resize(world);
  for (size_t r = expected.size(); r < world; ++r) writers[r] = static_cast<uint32_t>(r);
  return writers;
}

// A saved rank as a rank wrote it under want/R: decimal digits only, below 2^32.
std::optional<uint32_t> parse_rank(const comm::Bytes& v) {
  uint32_t out = 0;
  const auto* end = v.data() + v.size();
  const auto [ptr, ec] = std::from_chars(v.data(), end, out);
  if (v.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return out;
}

}  // namespace

void SessionCheckpoints::publish_report(Communicator& comm, comm::RendezvousStore& store, const std::string& prefix,
                                        std::span<const ckpt::ExpectedHolder> expected) {
  const auto rank = static_cast<uint32_t>(comm.rank());
  // Another rank of this host reports for it.
  if (writers_for(expected, static_cast<size_t>(comm.world_size()))[rank] != rank) return;
  wire::HolderReport mine;
  mine.set_holder(ctx_.holder);
  mine.set_addr(ctx_.agent_addr);
  for (const auto& h : ckpt::scan_held(segment_store())) {
    if (!h.version || h.version->id.job != ctx_.job) continue;
    auto* e = mine.add_held();
    e->set_rank(h.version->id.rank);
    e->set_step(h.version->id.step);
    e->set_world(h.version->id.world);
    e->set_bytes(h.version->total_bytes);
    e->set_local(!h.replica);
  }
  store.set(prefix + "report/" + std::to_string(rank), comm::to_bytes(mine.SerializeAsString()));
}

std::vector<ckpt::HolderReport> SessionCheckpoints::collect_reports(Communicator& comm, comm::RendezvousStore& store,
                                                                    const std::string& prefix,
                                                                    std::span<const ckpt::ExpectedHolder> expected) {
  const auto world = static_cast<size_t>(comm.world_size());
  publish_report(comm, store, prefix, expected);
  // One report per host, read once, and copied to each of its ranks (reports are in rank order).
  const auto writers = writers_for(expected, world);
  std::vector<std::string> keys;
  std::vector<size_t> index_of(world);
  for (size_t r = 0; r < world; ++r) {
    if (writers[r] == r) {
      index_of[r] = keys.size();
      keys.push_back(prefix + "report/" + std::to_string(r));
    } else {
      index_of[r] = index_of[writers[r]];
    }
  }
  const auto values = store.multi_get(keys, ctx_.rendezvous_timeout);
  std::vector<ckpt::HolderReport> hosts;
  hosts.reserve(values.size());
  for (const auto& v : values) {
    wire::HolderReport m;
    if (!m.ParseFromArray(v.data(), static_cast<int>(v.size()))) throw Error("a malformed checkpoint report");
    ckpt::HolderReport r{m.holder(), m.addr(), {}};
    r.held.reserve(static_cast<size_t>(m.held_size()));
    for (const auto& e : m.held()) r.held.push_back({e.rank(), e.step(), e.world(), e.bytes(), e.local()});
    hosts.push_back(std::move(r));
  }
  std::vector<ckpt::HolderReport> reports;
  reports.reserve(world);
  for (size_t r = 0; r < world; ++r) reports.push_back(hosts[index_of[r]]);
  // Any key holder can write any rank's report: only what the view's own member for that rank says counts.
  if (const auto dropped = ckpt::drop_foreign_reports(reports, expected); !dropped.empty()) {
    foreign_reports_.fetch_add(dropped.size(), std::memory_order_relaxed);
    std::lock_guard lock(mu_);
    if (auto held = warn_.admit("foreign", log::WarnLimiter::Clock::now())) {
      log::ckpt().warn(
          "ckpt: ignored the checkpoint report of rank {}{}: it names another holder or address than the "
          "view gives that rank (written by another key holder?); {} ignored so far{}",
          dropped.front(), dropped.size() > 1 ? " and " + std::to_string(dropped.size() - 1) + " more" : "",
          foreign_reports_.load(std::memory_order_relaxed),
          *held ? " (" + std::to_string(*held) + " warnings held back)" : std::string());
    }
  }
  return reports;
}

void SessionCheckpoints::plan_for_all(Communicator& comm, comm::RendezvousStore& store, const std::string& prefix,
                                      std::span<const ckpt::ExpectedHolder> expected, bool by_saved_rank,
                                      uint64_t at_most) {
  const auto world = static_cast<size_t>(comm.world_size());
  const auto reports = collect_reports(comm, store, prefix, expected);
  std::vector<std::optional<uint32_t>> wanted;
  ckpt::RestorePlan plan;
  if (by_saved_rank) {
    std::vector<std::string> keys;
    for (size_t r = 0; r < world; ++r) keys.push_back(prefix + "want/" + std::to_string(r));
    const auto values = store.multi_get(keys, ctx_.rendezvous_timeout);
    for (size_t r = 0; r < values.size() && plan.kind != ckpt::RestorePlan::Kind::refused; ++r) {
      wanted.push_back(parse_rank(values[r]));
      if (!values[r].empty() && !wanted.back()) {
        plan.kind = ckpt::RestorePlan::Kind::refused;
        plan.error = "rank " + std::to_string(r) + " asked for a saved rank that is not a number";
      }
    }
  }
  if (plan.kind != ckpt::RestorePlan::Kind::refused) plan = ckpt::plan_restore(reports, wanted, at_most);
  // One value per host: the parts of its ranks, in rank order (or the same refusal or "none" for all).
  const auto writers = writers_for(expected, world);
  std::map<uint32_t, std::vector<uint32_t>> ranks_of;
  for (size_t r = 0; r < world; ++r) ranks_of[writers[r]].push_back(static_cast<uint32_t>(r));
  for (const auto& [writer, ranks] : ranks_of) {
    store.set(prefix + "plan/" + std::to_string(writer), encode_host_plan(plan, ranks));
  }
}

std::optional<ckpt::RankPlan> SessionCheckpoints::read_plan(Communicator& comm, comm::RendezvousStore& store,
                                                            const std::string& prefix,
                                                            std::span<const ckpt::ExpectedHolder> expected) {
  const auto rank = static_cast<uint32_t>(comm.rank());
  const uint32_t writer = writers_for(expected, static_cast<size_t>(comm.world_size()))[rank];
  const auto value = store.get(prefix + "plan/" + std::to_string(writer), ctx_.rendezvous_timeout);
  return decode_host_plan(value, rank, writer, expected);
}

std::string SessionCheckpoints::verdict(Communicator& comm, comm::RendezvousStore& store, const std::string& prefix,
                                        const std::string& outcome, uint64_t step) {
  const auto world = static_cast<size_t>(comm.world_size());
  const auto rank = static_cast<uint32_t>(comm.rank());
  store.set(prefix + "ok/" + std::to_string(rank), comm::to_bytes(outcome));
  if (rank == 0) {
    std::vector<std::string> keys;
    for (size_t r = 0; r < world; ++r) keys.push_back(prefix + "ok/" + std::to_string(r));
    const auto oks = store.multi_get(keys, ctx_.rendezvous_timeout);
    std::string all = "1";
    for (size_t r = 0; r < oks.size(); ++r) {
      if (!oks[r].empty() && oks[r].front() == 'E') {
        all = "Erestore of step " + std::to_string(step) + " stopped by rank " + std::to_string(r) + ": " +
              std::string(oks[r].begin() + 1, oks[r].end());
        break;
      }
      if (oks[r] != comm::Bytes{'1'}) all = "0";
    }
    store.set(prefix + "verdict", comm::to_bytes(all));
  }
  const auto v = store.get(prefix + "verdict", ctx_.rendezvous_timeout);
  return std::string(v.begin(), v.end());
}

}  // namespace shoal::session

// CheckpointService's part of --ckpt-dir: bringing persisted versions back into memory at start, and what
// `ckpt-ls` says of the directory.
#include <map>

#include "base/log.hpp"
#include "ckpt_service/service.hpp"
#include "ckpt_shm/persist_trust.hpp"

namespace shoal::ckpt_service {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

void CheckpointService::load_persisted(const ckpt::PersistDir& dir) {
  // Rank -> the newest step this host holds in memory, its own slots or replicas.
  std::map<uint32_t, uint64_t> in_memory;
  for (const auto& h : held()) {
    if (!h.version || h.version->id.job != cfg_.job) continue;
    auto& step = in_memory[h.version->id.rank];
    step = std::max(step, h.version->id.step);
  }
  // Every step the directory keeps (keep_per_rank of each rank), oldest first, not only the newest: a newest
  // version that cannot be used (a file refused or found corrupt here, its content refused by the trainer)
  // leaves the one before it restorable. list() is by rank, then step ascending.
  for (const auto& p : dir.list()) {
    const uint32_t rank = p.rank;
    if (auto m = in_memory.find(rank); m != in_memory.end() && m->second >= p.step) continue;
    const auto started = Clock::now();
    std::lock_guard lock(store_mu_);
    if (auto room = make_room(rank, p.bytes); !room) {
      log::ckpt().warn("ckpt: rank {} step {} stays on disk only ({}): {}", rank, p.step, p.path, room.error().message);
      continue;
    }
    auto incoming = replicas_->begin(rank, p.step, p.bytes);
    if (!incoming) {
      log::ckpt().warn("ckpt: rank {} step {} stays on disk only ({}): {}", rank, p.step, p.path,
                       incoming.error().message);
      continue;
    }
    auto loaded = dir.load_into(rank, p.step, [&](uint64_t bytes) -> Result<std::span<std::byte>> {
      if (bytes > incoming->bytes().size()) return fail("the file grew since it was listed");
      return incoming->bytes().first(static_cast<size_t>(bytes));
    });
    if (!loaded) {
      replicas_->abandon(std::move(*incoming));
      log::ckpt().warn("ckpt: rank {} step {} could not be loaded from disk: {}", rank, p.step, loaded.error().message);
      continue;
    }
    if (auto kept = replicas_->complete(std::move(*incoming)); !kept) {
      log::ckpt().warn("ckpt: rank {} step {} loaded from disk was not kept: {}", rank, p.step, kept.error().message);
      continue;
    }
    {
      std::lock_guard origins_lock(mu_);
      origins_[{rank, p.step}] = "(disk: " + p.path + ")";
    }
    const double s = std::chrono::duration<double>(Clock::now() - started).count();
    log::ckpt().info("ckpt: loaded rank {} step {} from {} into memory ({} bytes in {:.3f} s), for restores", rank,
                     p.step, p.path, p.bytes, s);
  }
}

control::PersistSection CheckpointService::persist_section() const {
  const auto& dir = persister_->dir();
  control::PersistSection p;
  p.dir = dir.job_dir();
  for (const auto& v : dir.list()) p.files.push_back({v.rank, v.step, v.world, v.bytes, v.path});
  const auto pc = dir.counters();
  p.counters = {pc.persisted, pc.bytes, pc.refused, pc.cancelled, pc.failed, pc.removed, persister_->busy()};
  using ckpt::PersistRefusal;
  const auto r = ckpt::refused_persisted_counts();
  const auto at = [&](PersistRefusal cause) { return r[static_cast<size_t>(cause)]; };
  p.refused = {at(PersistRefusal::unsafe_directory), at(PersistRefusal::symlink),      at(PersistRefusal::not_regular),
               at(PersistRefusal::foreign_owner),    at(PersistRefusal::loose_mode),   at(PersistRefusal::oversized),
               at(PersistRefusal::invalid)};
  return p;
}

}  // namespace shoal::ckpt_service

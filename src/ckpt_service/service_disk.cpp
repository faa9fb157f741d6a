// CheckpointService's part of --ckpt-dir: bringing persisted versions back into memory at start (its own) and
// at the first view (the newest step every rank persisted, under any member's name), and what `ckpt-ls` says
// of the directory.
#include <map>

#include "base/log.hpp"
#include "ckpt_service/service.hpp"
#include "ckpt_shm/persist_peers.hpp"
#include "ckpt_shm/persist_trust.hpp"
#include "ckpt_shm/persisted_resume.hpp"

namespace shoal::ckpt_service {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

std::map<uint32_t, uint64_t> CheckpointService::newest_in_memory() const {
  std::map<uint32_t, uint64_t> out;
  for (const auto& h : held()) {
    if (!h.version || h.version->id.job != cfg_.job) continue;
    auto& step = out[h.version->id.rank];
    step = std::max(step, h.version->id.step);
  }
  return out;
}

bool CheckpointService::load_from_disk(const ckpt::PersistedVersion& p, const DiskRead& read) {
  const uint32_t rank = p.rank;
  const auto started = Clock::now();
  std::lock_guard lock(store_mu_);
  if (auto room = make_room(rank, p.bytes); !room) {
    log::ckpt().warn("ckpt: rank {} step {} stays on disk only ({}): {}", rank, p.step, p.path, room.error().message);
    return false;
  }
  auto incoming = replicas_->begin(rank, p.step, p.bytes);
  if (!incoming) {
    log::ckpt().warn("ckpt: rank {} step {} stays on disk only ({}): {}", rank, p.step, p.path,
                     incoming.error().message);
    return false;
  }
  auto loaded = read([&](uint64_t bytes) -> Result<std::span<std::byte>> {
    if (bytes > incoming->bytes().size()) return fail("the file grew since it was listed");
    return incoming->bytes().first(static_cast<size_t>(bytes));
  });
  if (!loaded) {
    replicas_->abandon(std::move(*incoming));
    log::ckpt().warn("ckpt: rank {} step {} could not be loaded from disk: {}", rank, p.step, loaded.error().message);
    return false;
  }
  if (auto kept = replicas_->complete(std::move(*incoming)); !kept) {
    log::ckpt().warn("ckpt: rank {} step {} loaded from disk was not kept: {}", rank, p.step, kept.error().message);
    return false;
  }
  {
    std::lock_guard origins_lock(mu_);
    origins_[{rank, p.step}] = "(disk: " + p.path + ")";
  }
  const double s = std::chrono::duration<double>(Clock::now() - started).count();
  log::ckpt().info("ckpt: loaded rank {} step {} from {} into memory ({} bytes in {:.3f} s), for restores", rank,
                   p.step, p.path, p.bytes, s);
  return true;
}

void CheckpointService::load_persisted(const ckpt::PersistDir& dir) {
  // Rank -> the newest step this host holds in memory, its own slots or replicas.
  const auto in_memory = newest_in_memory();
  // Every step the directory keeps (keep_per_rank of each rank), oldest first, not only the newest: a newest
  // version that cannot be used (a file refused or found corrupt here, its content refused by the trainer)
  // leaves the one before it restorable. list() is by rank, then step ascending.
  for (const auto& p : dir.list()) {
    if (auto m = in_memory.find(p.rank); m != in_memory.end() && m->second >= p.step) continue;
    (void)load_from_disk(
        p, [&](const ckpt::PersistDir::Placement& place) { return dir.load_into(p.rank, p.step, place); });
  }
}

void CheckpointService::resume_persisted(const membership::View& view) {
  std::vector<ckpt::ResumeMember> members;
  for (const auto& m : view.members()) members.push_back({ckpt::member_dir_name(m.name), m.join_epoch});
  const std::string self = ckpt::member_dir_name(self_);
  if (!ckpt::among_first_members(members, self)) return;  // the cluster ran before this host joined it
  const uint64_t max_bytes = persister_->dir().config().max_version_bytes;
  const auto found = ckpt::find_persisted(cfg_.persist_dir, cfg_.job, max_bytes);
  // The step to resume from, and as many older whole ones as each directory keeps: a restore that fails on
  // the newest (a file corrupt at load, a state the trainer refuses) falls back to the one before it.
  const auto whole = ckpt::whole_persisted_steps(found, std::max<uint32_t>(cfg_.persist_keep, 1));
  if (whole.empty()) {
    if (!found.empty()) {
      log::ckpt().info("ckpt: {} holds {} version(s) of job {}, but no step that every rank of its world persisted",
                       cfg_.persist_dir, found.size(), cfg_.job);
    }
    return;
  }
  const auto in_memory = newest_in_memory();
  const auto& newest = whole.front();
  size_t falls_here = 0;
  size_t loaded = 0;
  // Oldest first, as at start: when the budget runs short, the replicas dropped first are the oldest.
  for (auto choice = whole.rbegin(); choice != whole.rend(); ++choice) {
    for (const uint32_t rank : ckpt::resume_ranks_for(*choice, members, self)) {
      if (choice->step == newest.step) ++falls_here;
      // Held already (its own files, loaded at start): at the resume's step or newer.
      if (auto m = in_memory.find(rank); m != in_memory.end() && m->second >= newest.step) continue;
      // The copies of the rank's file, best first: one that fails its full check leaves the next.
      for (const auto& copy : choice->ranks[rank]) {
        const bool ok =
            load_from_disk(copy.version, [&](const ckpt::PersistDir::Placement& place) -> Result<ckpt::VersionInfo> {
              auto read = ckpt::load_persisted_file(copy.version, cfg_.job, max_bytes, place);
              if (!read) return fail(read.error().message);
              return std::move(*read);
            });
        if (ok) {
          ++loaded;
          break;
        }
      }
    }
  }
  log::ckpt().info(
      "ckpt: the newest step of job {} that every rank persisted in {} is {} (a world of {}; {} whole step(s) "
      "kept): {} of its ranks fall to this host in epoch {}, {} version(s) loaded now",
      cfg_.job, cfg_.persist_dir, newest.step, newest.world, whole.size(), falls_here, view.epoch(), loaded);
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

// The persister's thread: finds the queued version among this host's local slots and writes it out.
#include "ckpt_service/persister.hpp"

#include "base/log.hpp"
#include "ckpt_service/background_priority.hpp"
#include "ckpt_service/held_versions.hpp"
#include "ckpt_shm/held_scan.hpp"

namespace shoal::ckpt_service {

CheckpointPersister::CheckpointPersister(ckpt::PersistDir dir, std::function<std::string()> store,
                                         std::function<ckpt::SegmentOwners()> owners)
    : dir_(std::move(dir)), store_(std::move(store)), owners_(std::move(owners)) {}

CheckpointPersister::~CheckpointPersister() { stop(); }

void CheckpointPersister::start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] { loop(); });
}

void CheckpointPersister::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    cancel_ = true;
    if (writing_ || !pending_.empty()) {
      log::ckpt().warn("ckpt: stopping with {} version(s) not yet persisted to {}",
                       pending_.size() + (writing_ ? 1 : 0), dir_.job_dir());
    }
    pending_.clear();
    wake_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

std::vector<ckpt::HeldSegment> CheckpointPersister::held_now() const {
  const auto store = store_();
  if (store.empty()) return {};
  return ckpt::scan_held(store, "/dev/shm", owners_());
}

void CheckpointPersister::committed(uint32_t rank, uint64_t step) {
  std::lock_guard lock(mu_);
  if (stopping_) return;
  auto& queued = pending_[rank];
  queued = std::max(queued, step);
  wake_.notify_all();
}

void CheckpointPersister::flush() {
  const auto newest = newest_local_steps(held_now(), dir_.config().job);
  std::lock_guard lock(mu_);
  size_t queued = 0;
  for (const auto& [rank, step] : newest) {
    const auto on_disk = dir_.newest(rank);
    if (on_disk && on_disk->step >= step) continue;
    auto& q = pending_[rank];
    q = std::max(q, step);
    ++queued;
  }
  if (queued > 0)
    log::ckpt().info("ckpt: persisting the newest version of {} rank(s) to {} before exit", queued, dir_.job_dir());
  wake_.notify_all();
}

bool CheckpointPersister::busy() const {
  std::lock_guard lock(mu_);
  return writing_ || !pending_.empty();
}

void CheckpointPersister::loop() {
  lower_this_thread_priority();
  std::unique_lock lock(mu_);
  while (true) {
    wake_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
    if (stopping_) return;
    const auto [rank, step] = *pending_.begin();
    pending_.erase(pending_.begin());
    writing_ = true;
    lock.unlock();
    persist(rank, step);
    lock.lock();
    writing_ = false;
  }
}

void CheckpointPersister::persist(uint32_t rank, uint64_t step) {
  const auto& job = dir_.config().job;
  if (const auto on_disk = dir_.newest(rank); on_disk && on_disk->step >= step) return;
  for (const auto& held : holding(held_now(), job, rank, step)) {
    if (held.replica) continue;
    auto mapped = map_version(held, job, rank, step, owners_());
    if (!mapped) continue;
    auto written =
        dir_.persist(std::span<const std::byte>(mapped->segment.bytes()).first(mapped->info.total_bytes), &cancel_);
    if (!written && !cancel_) {
      log::ckpt().warn("ckpt: rank {} step {} was not persisted: {}", rank, step, written.error().message);
    }
    return;
  }
  log::ckpt().info("ckpt: rank {} step {} is no longer held here; a newer save replaced it before it was persisted",
                   rank, step);
}

}  // namespace shoal::ckpt_service

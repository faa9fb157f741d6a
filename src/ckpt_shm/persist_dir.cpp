// PersistDir: the job directory's logic: which versions are persisted, persisting one (its file written by
// persist_write, then renamed into place and recorded in the manifest), listing and loading them. File
// format: persist_files; fd helpers: persist_io.
#include "ckpt_shm/persist_dir.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string_view>
#include <system_error>
#include <utility>

#include "base/log.hpp"
#include "ckpt_shm/checksum.hpp"
#include "ckpt_shm/persist_files.hpp"
#include "ckpt_shm/persist_io.hpp"
#include "ckpt_shm/persist_peers.hpp"
#include "ckpt_shm/persist_trust.hpp"
#include "ckpt_shm/persist_write.hpp"
#include "ckpt_shm/shm_capacity.hpp"
#include "ckpt_shm/shm_segment.hpp"
#include "ckpt_shm/version_layout.hpp"

namespace shoal::ckpt {
namespace {

namespace fs = std::filesystem;

// What is persisted, for an error about `rank`.
std::string describe(const Entries& entries, uint32_t rank) {
  std::string steps;
  for (auto it = entries.lower_bound({rank, 0}); it != entries.end() && it->first.first == rank; ++it) {
    steps += (steps.empty() ? "" : ", ") + std::to_string(it->first.second);
  }
  if (!steps.empty()) return "rank " + std::to_string(rank) + " has step(s) " + steps;
  return "rank " + std::to_string(rank) + " has none (" + std::to_string(entries.size()) +
         " version(s) of other ranks)";
}

}  // namespace

struct PersistDir::State {
  std::mutex write_mutex;    // serializes persist(): one temporary file and manifest update at a time
  mutable std::mutex mutex;  // guards what follows
  Entries entries;
  PersistCounters counters;
};

PersistDir::PersistDir(PersistConfig config, std::string job_dir)
    : config_(std::move(config)), job_dir_(std::move(job_dir)), state_(std::make_unique<State>()) {}
PersistDir::~PersistDir() = default;
PersistDir::PersistDir(PersistDir&& other) noexcept = default;
PersistDir& PersistDir::operator=(PersistDir&& other) noexcept = default;

Result<PersistDir> PersistDir::open(PersistConfig config) {
  if (config.dir.empty()) return fail(std::string("the checkpoint directory must be named (it is empty)"));
  if (auto ok = check_job_name(config.job); !ok) return fail(ok.error().message);
  if (config.keep_per_rank < 1) return fail(std::string("a checkpoint directory must keep at least 1 step per rank"));
  const std::string job_dir = (fs::path(config.dir) / config.job).string();
  if (auto guarded = guard_directory(config.dir, true); !guarded) {
    return fail("cannot use the checkpoint directory: " + guarded.error().message);
  }
  if (auto guarded = guard_directory(job_dir, false); !guarded) {
    return fail("cannot use the checkpoint directory: " + guarded.error().message);
  }
  if (config.max_version_bytes == 0) {
    config.max_version_bytes = default_budget_bytes("/dev/shm", 100);
    if (config.max_version_bytes == 0) config.max_version_bytes = ~uint64_t{0};
  }
  if (auto removed = remove_leftovers(job_dir); !removed) {
    return fail("cannot use the checkpoint directory " + job_dir + ": " + removed.error().message);
  }
  auto entries = recover_entries(job_dir, config.job, config.max_version_bytes);
  if (!entries) return fail("cannot use the checkpoint directory " + job_dir + ": " + entries.error().message);
  // Written at every open: a directory we cannot write fails here rather than at the first persist.
  if (auto written = write_manifest(job_dir, *entries); !written) {
    return fail("cannot use the checkpoint directory " + job_dir + ": " + written.error().message);
  }
  log::ckpt().debug("job {}: {} persisted version(s) in {}", config.job, entries->size(), job_dir);
  PersistDir out(std::move(config), job_dir);
  out.state_->entries = std::move(*entries);
  return out;
}

std::string PersistDir::path_of(uint32_t rank, uint64_t step) const {
  return (fs::path(job_dir_) / file_name(rank, step)).string();
}

Unexpected<Failure> PersistDir::count_failure(uint64_t PersistCounters::*kind, std::string message) {
  std::lock_guard lock(state_->mutex);
  ++(state_->counters.*kind);
  return fail(std::move(message));
}

Result<std::optional<PersistedVersion>> PersistDir::check_new(const VersionIdentity& id) {
  const std::string what = version_text(id.rank, id.step);
  if (id.job != config_.job) {
    return count_failure(&PersistCounters::refused, "cannot persist " + what + ": it belongs to job " + id.job +
                                                        ", this directory holds job " + config_.job);
  }
  std::unique_lock lock(state_->mutex);
  const auto& entries = state_->entries;
  if (auto it = entries.find({id.rank, id.step}); it != entries.end() && it->second.sequence == id.sequence) {
    return std::optional(it->second);
  }
  // A step older than keep_per_rank persisted ones would be removed as soon as it is written.
  const auto newer = static_cast<uint64_t>(
      std::distance(entries.upper_bound({id.rank, id.step}), entries.upper_bound({id.rank, ~0ull})));
  lock.unlock();
  if (newer >= config_.keep_per_rank) {
    return count_failure(&PersistCounters::refused, "cannot persist " + what + ": " + std::to_string(newer) +
                                                        " newer steps of the rank are persisted, and only " +
                                                        std::to_string(config_.keep_per_rank) + " are kept");
  }
  return std::optional<PersistedVersion>();
}

void PersistDir::record(const PersistedVersion& entry) {
  std::vector<PersistedVersion> dropped;
  Entries after;
  {
    std::lock_guard lock(state_->mutex);
    auto& entries = state_->entries;
    entries.insert_or_assign(Key{entry.rank, entry.step}, entry);
    auto first = entries.lower_bound({entry.rank, 0});
    auto count = static_cast<uint64_t>(std::distance(first, entries.upper_bound({entry.rank, ~0ull})));
    for (; count > config_.keep_per_rank; --count) {
      dropped.push_back(first->second);
      first = entries.erase(first);
    }
    ++state_->counters.persisted;
    state_->counters.bytes += entry.bytes;
    after = entries;
  }
  // The manifest forgets the old files before they go: it never lists a file that is missing.
  if (auto m = write_manifest(job_dir_, after); !m) {
    log::ckpt().warn("job {}: {} (the next open rebuilds it from the files)", config_.job, m.error().message);
  }
  for (const auto& old : dropped) {
    if (::unlink(old.path.c_str()) != 0 && errno != ENOENT) {
      log::ckpt().warn("job {}: {}", config_.job, io_error("remove the old checkpoint", old.path, errno));
      continue;
    }
    std::lock_guard lock(state_->mutex);
    ++state_->counters.removed;
  }
}

Result<PersistedVersion> PersistDir::persist(std::span<const std::byte> version, const std::atomic<bool>* cancel) {
  std::lock_guard write_lock(state_->write_mutex);
  const auto start = std::chrono::steady_clock::now();
  auto snapshot = snapshot_prefix(version);
  if (!snapshot) return count_failure(&PersistCounters::refused, "cannot persist: " + snapshot.error().message);
  const VersionIdentity& id = snapshot->info.id;
  const std::string what = version_text(id.rank, id.step);
  auto existing = check_new(id);
  if (!existing) return fail(existing.error().message);
  if (existing->has_value()) return **existing;  // persisted already: nothing to write
  if (cancel_raised(cancel)) return count_failure(&PersistCounters::cancelled, "persisting " + what + " was cancelled");

  const std::string final_path = path_of(id.rank, id.step);
  auto created = create_temp_file(final_path);
  if (!created) return count_failure(&PersistCounters::failed, created.error().message);
  const std::string tmp = created->path;
  if (auto written = write_version_file(version, *snapshot, created->fd, tmp, cancel); !written) {
    ::unlink(tmp.c_str());
    return count_failure(written.error().counter, written.error().message);
  }
  if (::rename(tmp.c_str(), final_path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return count_failure(&PersistCounters::failed, io_error("rename into place", final_path, err));
  }
  if (int err = fsync_dir(job_dir_); err != 0) {
    // Complete, but its name may not survive a crash: not persisted, and whatever it replaced is gone.
    ::unlink(final_path.c_str());
    std::lock_guard lock(state_->mutex);
    state_->entries.erase({id.rank, id.step});
    ++state_->counters.failed;
    return fail(io_error("sync the directory", job_dir_, err));
  }
  const PersistedVersion entry{id.rank, id.step, id.sequence, id.world, snapshot->info.total_bytes, final_path};
  record(entry);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  log::ckpt().info("job {}: persisted {}: {} bytes in {:.3f} s ({:.2f} GB/s) to {}", config_.job, what, entry.bytes,
                   seconds, seconds > 0 ? static_cast<double>(entry.bytes) / seconds / 1e9 : 0.0, final_path);
  return entry;
}

std::vector<PersistedVersion> PersistDir::list() const {
  std::lock_guard lock(state_->mutex);
  std::vector<PersistedVersion> out;
  out.reserve(state_->entries.size());
  for (const auto& [key, e] : state_->entries) out.push_back(e);
  return out;
}

std::optional<PersistedVersion> PersistDir::newest(uint32_t rank) const {
  std::lock_guard lock(state_->mutex);
  const auto& entries = state_->entries;
  auto it = entries.upper_bound({rank, ~0ull});
  if (it == entries.begin() || std::prev(it)->first.first != rank) return std::nullopt;
  return std::prev(it)->second;
}

Result<std::vector<std::byte>> PersistDir::load(uint32_t rank, uint64_t step) const {
  std::vector<std::byte> bytes;
  auto info = load_into(rank, step, [&](uint64_t size) -> Result<std::span<std::byte>> {
    bytes.resize(static_cast<size_t>(size));
    return std::span<std::byte>(bytes);
  });
  if (!info) return fail(info.error().message);
  return bytes;
}

Result<VersionInfo> PersistDir::load_into(uint32_t rank, uint64_t step, const Placement& place) const {
  const std::string what = version_text(rank, step);
  std::optional<PersistedVersion> entry;
  {
    std::lock_guard lock(state_->mutex);
    const auto& entries = state_->entries;
    if (auto it = entries.find({rank, step}); it != entries.end()) {
      entry = it->second;
    } else {
      return fail(what + " is not persisted in " + job_dir_ + ": " + describe(entries, rank));
    }
  }
  // Refused or corrupt: no longer offered (newest() moves on to the rank's previous step).
  const auto drop = [&](const std::string& message) {
    std::lock_guard lock(state_->mutex);
    state_->entries.erase({rank, step});
    return fail(message);
  };
  auto loaded = load_persisted_file(*entry, config_.job, config_.max_version_bytes, place);
  if (!loaded && loaded.error().refusal) return drop(loaded.error().message);
  if (!loaded) return fail(loaded.error().message);
  return std::move(*loaded);
}

PersistCounters PersistDir::counters() const {
  std::lock_guard lock(state_->mutex);
  return state_->counters;
}

}  // namespace shoal::ckpt

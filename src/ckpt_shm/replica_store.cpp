// ReplicaStore: adopting replicas at open, receiving into fresh segments, validating what was received
// and keeping the newest replicas of each rank.
#include "ckpt_shm/replica_store.hpp"

#include <cstring>

#include <algorithm>
#include <filesystem>
#include <utility>

#include "base/log.hpp"
#include "ckpt_shm/version_layout.hpp"

namespace shoal::ckpt {
namespace {

static_assert(static_cast<size_t>(ReplicaCause::untrusted) + 1 == kReplicaCauses);

// Where glibc's shm_open keeps its objects: a name "/x" is the file /dev/shm/x.
constexpr const char* kShmRoot = "/dev/shm";

std::string replica_text(std::string_view job, uint32_t rank, uint64_t step) {
  return "step " + std::to_string(step) + " of rank " + std::to_string(rank) + " of job " + std::string(job);
}

// The replica segments of `store` in /dev/shm, as (object name, parsed name), sorted by name so that
// open() does the same thing whatever order the directory lists them in. Files under the job's
// replica prefix that do not parse are not ours to touch, and are left out.
Result<std::vector<std::pair<std::string, ReplicaName>>> scan_replicas(std::string_view store) {
  const std::string prefix = replica_file_prefix(store);
  std::vector<std::pair<std::string, ReplicaName>> out;
  std::error_code ec;
  std::filesystem::directory_iterator it(kShmRoot, ec);
  if (ec) return fail(std::string("cannot list ") + kShmRoot + ": " + ec.message());
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const std::string file = it->path().filename().string();
    if (!file.starts_with(prefix)) continue;
    auto parsed = parse_replica_segment_name(file);
    if (!parsed || parsed->job != store) continue;
    out.emplace_back("/" + file, std::move(*parsed));
  }
  if (ec) return fail(std::string("cannot list ") + kShmRoot + ": " + ec.message());
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

// Unlinks the spares of `store` left in /dev/shm (by an agent that stopped): they hold no version.
void unlink_spares(std::string_view store) {
  std::error_code ec;
  for (std::filesystem::directory_iterator it(kShmRoot, ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    const std::string file = it->path().filename().string();
    if (is_spare_segment_name(file, store)) (void)ShmSegment::unlink("/" + file);
  }
}

}  // namespace

std::string_view name(ReplicaCause c) {
  switch (c) {
    case ReplicaCause::already_held:
      return "already_held";
    case ReplicaCause::receiving:
      return "receiving";
    case ReplicaCause::superseded:
      return "superseded";
    case ReplicaCause::bad_request:
      return "bad_request";
    case ReplicaCause::bad_version:
      return "bad_version";
    case ReplicaCause::wrong_identity:
      return "wrong_identity";
    case ReplicaCause::no_memory:
      return "no_memory";
    case ReplicaCause::untrusted:
      return "untrusted";
  }
  return "unknown";
}

// ---- Incoming ----

Incoming::Incoming(std::shared_ptr<detail::Receiving> receiving, ShmSegment segment, uint32_t rank, uint64_t step)
    : receiving_(std::move(receiving)), segment_(std::move(segment)), rank_(rank), step_(step) {}

Incoming::~Incoming() { finish(false); }

Incoming& Incoming::operator=(Incoming&& other) noexcept {
  if (this != &other) {
    finish(false);
    receiving_ = std::move(other.receiving_);
    segment_ = std::move(other.segment_);
    rank_ = other.rank_;
    step_ = other.step_;
  }
  return *this;
}

void Incoming::finish(bool keep) {
  if (!receiving_) return;
  receiving_->bytes.erase({rank_, step_});
  receiving_.reset();
  if (keep) return;
  const std::string segment_name = segment_.name();
  segment_ = ShmSegment{};
  if (auto r = ShmSegment::unlink(segment_name); !r) {
    log::get(log::Component::ckpt).warn("abandoning a replica receive: {}", r.error().message);
  }
}

// ---- ReplicaStore ----

ReplicaStore::ReplicaStore(ReplicaStoreConfig config) : config_(std::move(config)) {}

ReplicaStore::~ReplicaStore() { (void)drop_spares(); }

Result<ReplicaStore> ReplicaStore::open(ReplicaStoreConfig config) {
  if (auto ok = check_job_name(config.job); !ok) return fail(ok.error().message);
  if (config.store.empty()) config.store = config.job;
  if (auto ok = check_job_name(config.store); !ok) return fail("replica store name: " + ok.error().message);
  if (config.keep_per_rank < 1) return fail(std::string("a replica store must keep at least 1 replica per rank"));
  auto found = scan_replicas(config.store);
  if (!found) return fail(found.error().message);

  unlink_spares(config.store);
  ReplicaStore store(std::move(config));
  auto& log = log::get(log::Component::ckpt);
  std::vector<uint32_t> ranks;
  for (auto& [object, parsed] : *found) {
    auto segment = ShmSegment::open_trusted(object);
    if (!segment && segment.error().refusal) {
      // Not ours to adopt, nor to remove (segment_trust counted and logged it).
      ++store.untrusted_at_open_;
      continue;
    }
    // An object that cannot be mapped is most often empty: a receive that died before sizing it.
    auto kept =
        segment ? store.validate(*segment, parsed.rank, parsed.step)
                : Result<Kept, ReplicaError>(fail(ReplicaError{ReplicaCause::bad_version, segment.error().message}));
    if (!kept) {
      segment = ShmSegment{};
      if (auto r = ShmSegment::unlink(object); !r) {
        log.warn("job {}: cannot remove the broken replica {}: {}", store.config_.job, object, r.error().message);
        continue;
      }
      ++store.discarded_at_open_;
      // One line per segment only at debug: the caller reports the count (discarded_at_open).
      log.debug("job {}: removed replica {} left by a receive that did not finish ({})", store.config_.job, object,
                kept.error().message);
      continue;
    }
    kept->segment = std::make_shared<ShmSegment>(std::move(*segment));
    store.kept_.emplace(Key{parsed.rank, parsed.step}, std::move(*kept));
    ranks.push_back(parsed.rank);
  }
  // keep_per_rank may be lower than when the replicas were received.
  for (uint32_t rank : ranks) store.keep_newest(rank);
  return store;
}

Status ReplicaStore::remove_all(std::string_view store) {
  if (auto ok = check_job_name(store); !ok) return fail(ok.error().message);
  auto found = scan_replicas(store);
  if (!found) return fail(found.error().message);
  unlink_spares(store);
  std::string errors;
  for (const auto& entry : *found) {
    if (auto r = ShmSegment::unlink(entry.first); !r) errors += (errors.empty() ? "" : "; ") + r.error().message;
  }
  if (!errors.empty()) return fail(errors);
  return Ok{};
}

Unexpected<ReplicaError> ReplicaStore::refuse(ReplicaCause cause, std::string message) {
  ++refused_[static_cast<size_t>(cause)];
  auto& log = log::get(log::Component::ckpt);
  const bool fault =
      cause != ReplicaCause::already_held && cause != ReplicaCause::receiving && cause != ReplicaCause::superseded;
  const uint32_t bit = 1u << static_cast<uint32_t>(cause);
  if (!fault) {
    log.debug("{}", message);
  } else if ((warned_causes_ & bit) == 0) {
    warned_causes_ |= bit;
    log.warn("{}; further refusals with cause {} are not logged", message, name(cause));
  }
  return fail(ReplicaError{cause, std::move(message)});
}

Result<ReplicaStore::Kept, ReplicaError> ReplicaStore::validate(const ShmSegment& segment, uint32_t rank,
                                                                uint64_t step) const {
  const std::string what = replica_text(config_.job, rank, step);
  auto info = decode_version(segment.bytes(), DataCheck::skip);
  if (!info) {
    return fail(ReplicaError{ReplicaCause::bad_version, what + " is not a sealed version (" +
                                                            std::string(name(info.error().cause)) + ": " +
                                                            info.error().detail + ")"});
  }
  if (info->id.job != config_.job || info->id.rank != rank || info->id.step != step) {
    return fail(ReplicaError{ReplicaCause::wrong_identity,
                             what + " holds " + replica_text(info->id.job, info->id.rank, info->id.step)});
  }
  Kept kept;
  kept.world = info->id.world;
  kept.sequence = info->id.sequence;
  kept.total_bytes = info->total_bytes;
  return kept;
}

Result<Incoming, ReplicaError> ReplicaStore::begin(uint32_t rank, uint64_t step, uint64_t total_bytes) {
  const Key key{rank, step};
  const std::string what = replica_text(config_.job, rank, step);
  if (total_bytes < kHeaderBytes) {
    return refuse(ReplicaCause::bad_request, "cannot receive " + what + " in " + std::to_string(total_bytes) +
                                                 " bytes: a version needs at least " + std::to_string(kHeaderBytes));
  }
  if (receiving_->bytes.contains(key)) return refuse(ReplicaCause::receiving, what + " is being received already");
  if (kept_.contains(key)) return refuse(ReplicaCause::already_held, what + " is held here already");
  uint32_t newer = 0;
  for (auto it = kept_.upper_bound(key); it != kept_.end() && it->first.first == rank; ++it) ++newer;
  if (newer >= config_.keep_per_rank) {
    return refuse(ReplicaCause::superseded, what + " is older than the " + std::to_string(newer) +
                                                " replicas of that rank held here, and would be dropped at once");
  }

  auto object = replica_segment_name(config_.store, rank, step);
  if (!object) return refuse(ReplicaCause::bad_request, object.error().message);
  // A segment of that name that this store does not know about: the leftover of a receive that
  // died, or a replica that appeared since open (adopted, so the sender can skip it).
  auto existing = ShmSegment::open_trusted(*object);
  if (!existing && existing.error().refusal) {
    return refuse(ReplicaCause::untrusted, "cannot receive " + what + ": " + existing.error().message);
  }
  if (existing) {
    if (auto kept = validate(*existing, rank, step)) {
      kept->segment = std::make_shared<ShmSegment>(std::move(*existing));
      kept_.emplace(key, std::move(*kept));
      return refuse(ReplicaCause::already_held, what + " is held here already");
    }
    *existing = ShmSegment{};
    if (auto r = ShmSegment::unlink(*object); !r) return refuse(ReplicaCause::no_memory, r.error().message);
  }
  if (auto recycled = reuse_memory(rank, *object, total_bytes)) {
    receiving_->bytes[key] = total_bytes;
    return Incoming(receiving_, std::move(*recycled), rank, step);
  }
  auto segment = ShmSegment::create(*object, total_bytes);
  if (!segment) return refuse(ReplicaCause::no_memory, "cannot receive " + what + ": " + segment.error().message);
  receiving_->bytes[key] = total_bytes;
  return Incoming(receiving_, std::move(*segment), rank, step);
}

std::optional<ShmSegment> ReplicaStore::reuse_memory(uint32_t rank, const std::string& object, uint64_t total_bytes) {
  std::optional<ShmSegment> segment;
  if (const auto spare = spares_.find(rank); spare != spares_.end()) {
    segment = std::move(spare->second);
    spares_.erase(spare);
  } else {
    // Only when the new replica would push the oldest out anyway (the rank holds keep_per_rank), and a
    // newer complete replica stays while this one arrives: with keep_per_rank 1, overwriting the oldest
    // would leave the rank with no replica at all until the receive completes.
    auto first = kept_.lower_bound(Key{rank, 0});
    size_t held = 0;
    for (auto it = first; it != kept_.end() && it->first.first == rank; ++it) ++held;
    if (held < config_.keep_per_rank || held < 2) return std::nullopt;
    // Not while a fetch still streams from it (it holds a share): overwriting would spoil that copy.
    if (first->second.segment.use_count() > 1) return std::nullopt;
    segment = std::move(*first->second.segment);
    kept_.erase(first);
    // Unsealed before it changes names, so that no moment exists where the new name holds an old version.
    std::memset(segment->bytes().data(), 0, kHeaderBytes);
  }
  const std::string old_name = segment->name();
  if (auto r = segment->rename_to(object); !r) {
    log::get(log::Component::ckpt).warn("cannot reuse {} for the next replica: {}", old_name, r.error().message);
    (void)ShmSegment::unlink(old_name);
    return std::nullopt;
  }
  if (segment->size() < total_bytes) {
    if (auto r = segment->grow(total_bytes); !r) {
      (void)ShmSegment::unlink(object);
      return std::nullopt;
    }
  }
  return segment;
}

void ReplicaStore::retire(uint32_t rank, std::shared_ptr<ShmSegment> segment) {
  const std::string object = segment->name();
  auto spare_name = spare_segment_name(config_.store, rank);
  if (spare_name && !spares_.contains(rank) && segment.use_count() == 1) {
    ShmSegment spare = std::move(*segment);
    std::memset(spare.bytes().data(), 0, kHeaderBytes);  // unsealed first: a spare never holds a version
    if (spare.rename_to(*spare_name)) {
      spares_.emplace(rank, std::move(spare));
      return;
    }
  }
  // Forgotten even when the unlink fails: the next open() finds it again and retries.
  if (auto r = ShmSegment::unlink(object); !r) {
    log::get(log::Component::ckpt)
        .warn("job {}: cannot drop the old replica {}: {}", config_.job, object, r.error().message);
  }
}

Status ReplicaStore::complete(Incoming&& incoming) {
  // Consumed in every case: whatever is not kept is unlinked when `in` goes out of scope.
  Incoming in = std::move(incoming);
  if (!in.active()) return fail(std::string("no replica receive in progress: it was completed or abandoned already"));
  if (in.receiving_ != receiving_) return fail("the receive of " + in.segment_name() + " belongs to another store");
  const Key key{in.rank_, in.step_};
  auto kept = validate(in.segment_, in.rank_, in.step_);
  if (!kept) {
    auto refusal = refuse(kept.error().cause, "refusing a received replica: " + kept.error().message);
    return fail(refusal.error.message);
  }
  kept->segment = std::make_shared<ShmSegment>(std::move(in.segment_));
  in.finish(true);
  kept_.insert_or_assign(key, std::move(*kept));
  log::get(log::Component::ckpt).debug("holding the replica of {}", replica_text(config_.job, key.first, key.second));
  keep_newest(key.first);
  return Ok{};
}

void ReplicaStore::abandon(Incoming&& incoming) {
  Incoming in = std::move(incoming);
  in.finish(false);
}

void ReplicaStore::keep_newest(uint32_t rank) {
  std::vector<Key> held;  // ascending steps: the map is ordered by (rank, step)
  for (auto it = kept_.lower_bound(Key{rank, 0}); it != kept_.end() && it->first.first == rank; ++it) {
    held.push_back(it->first);
  }
  if (held.size() <= config_.keep_per_rank) return;
  const size_t excess = held.size() - config_.keep_per_rank;
  for (size_t i = 0; i < excess; ++i) {
    auto segment = std::move(kept_.at(held[i]).segment);
    kept_.erase(held[i]);
    retire(rank, std::move(segment));
  }
}

std::vector<ReplicaReport> ReplicaStore::list() const {
  std::vector<ReplicaReport> out;
  for (const auto& [key, kept] : kept_) {
    out.push_back(ReplicaReport{key.first, key.second, kept.world, kept.segment->size(), true, kept.segment->name(),
                                kept.sequence});
  }
  for (const auto& [key, bytes] : receiving_->bytes) {
    auto object = replica_segment_name(config_.store, key.first, key.second);
    out.push_back(ReplicaReport{key.first, key.second, 0, bytes, false, object ? *object : std::string(), 0});
  }
  std::stable_sort(out.begin(), out.end(), [](const ReplicaReport& a, const ReplicaReport& b) {
    return std::pair(a.rank, a.step) < std::pair(b.rank, b.step);
  });
  return out;
}

std::optional<std::span<const std::byte>> ReplicaStore::find(uint32_t rank, uint64_t step) const {
  const auto it = kept_.find(Key{rank, step});
  if (it == kept_.end()) return std::nullopt;
  return std::span<const std::byte>(it->second.segment->bytes()).first(it->second.total_bytes);
}

std::shared_ptr<const ShmSegment> ReplicaStore::share(uint32_t rank, uint64_t step) const {
  const auto it = kept_.find(Key{rank, step});
  return it == kept_.end() ? nullptr : it->second.segment;
}

Status ReplicaStore::drop(uint32_t rank, uint64_t step) {
  const Key key{rank, step};
  const std::string what = replica_text(config_.job, rank, step);
  if (receiving_->bytes.contains(key)) return fail("cannot drop " + what + ": it is being received");
  auto object = replica_segment_name(config_.store, rank, step);
  if (!object) return fail(object.error().message);
  kept_.erase(key);
  return ShmSegment::unlink(*object);
}

std::vector<HeldVersion> ReplicaStore::held_versions() const {
  std::vector<HeldVersion> out;
  for (const auto& [key, kept] : kept_) {
    out.push_back(HeldVersion{config_.job, key.first, key.second, kept.sequence, kept.segment->size(), true});
  }
  return out;
}

uint64_t ReplicaStore::spare_bytes() const {
  uint64_t total = 0;
  for (const auto& [rank, segment] : spares_) total += segment.size();
  return total;
}

uint64_t ReplicaStore::spare_bytes(uint32_t rank) const {
  const auto it = spares_.find(rank);
  return it == spares_.end() ? 0 : it->second.size();
}

uint64_t ReplicaStore::drop_spares(std::optional<uint32_t> except_rank) {
  uint64_t freed = 0;
  for (auto it = spares_.begin(); it != spares_.end();) {
    if (except_rank && it->first == *except_rank) {
      ++it;
      continue;
    }
    freed += it->second.size();
    const std::string object = it->second.name();
    it = spares_.erase(it);
    (void)ShmSegment::unlink(object);
  }
  return freed;
}

uint64_t ReplicaStore::receiving_bytes() const {
  uint64_t total = 0;
  for (const auto& [key, bytes] : receiving_->bytes) total += bytes;
  return total;
}

}  // namespace shoal::ckpt

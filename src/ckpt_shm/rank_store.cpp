// RankStore: choosing slots, sizing segments, sealing, and reading back the newest complete version.
#include "ckpt_shm/rank_store.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <utility>

#include "base/log.hpp"
#include "ckpt_shm/checksum.hpp"
#include "ckpt_shm/chunk_lists.hpp"
#include "ckpt_shm/chunk_ranges.hpp"
#include "ckpt_shm/device_copy.hpp"

namespace shoal::ckpt {
namespace {

std::string rank_text(const RankStoreConfig& c) { return "rank " + std::to_string(c.rank) + " of job " + c.job; }

}  // namespace

const ReadableBuffer* SealedVersion::find(std::string_view name) const {
  for (const auto& b : buffers) {
    if (b.name == name) return &b;
  }
  return nullptr;
}

RankStore::RankStore(RankStoreConfig config, std::vector<std::string> names)
    : config_(std::move(config)), names_(std::move(names)), segments_(names_.size()), verified_(names_.size()) {}

Result<RankStore> RankStore::open(RankStoreConfig config) {
  if (config.slots < 2) return fail("a rank store needs at least 2 version slots, got " + std::to_string(config.slots));
  if (config.world != 0 && config.world <= config.rank) {
    return fail("rank " + std::to_string(config.rank) + " does not fit world size " + std::to_string(config.world));
  }
  if (auto ok = check_job_name(config.job); !ok) return fail(ok.error().message);
  std::vector<std::string> names;
  for (uint32_t k = 0; k < config.slots; ++k) {
    auto n = slot_segment_name(config.segment_prefix(), config.rank, k);
    if (!n) return fail(n.error().message);
    names.push_back(*n);
  }
  RankStore store(std::move(config), std::move(names));
  for (uint32_t k = 0; k < store.config_.slots; ++k) store.refresh_slot(k);
  return store;
}

Status RankStore::remove_segments(std::string_view job, uint32_t rank, uint32_t slots) {
  std::string errors;
  for (uint32_t k = 0; k < slots; ++k) {
    auto n = slot_segment_name(job, rank, k);
    if (!n) return fail(n.error().message);
    if (auto r = ShmSegment::unlink(*n); !r) errors += (errors.empty() ? "" : "; ") + r.error().message;
  }
  if (!errors.empty()) return fail(errors);
  return Ok{};
}

void RankStore::refresh_slot(uint32_t slot) {
  auto& seg = segments_[slot];
  if (seg.valid()) {
    // A failed remap keeps the old mapping, which is still safe to read: the decoder checks bounds.
    (void)seg.refresh();
    return;
  }
  auto opened = ShmSegment::open_existing(names_[slot]);
  if (opened) seg = std::move(*opened);
}

void RankStore::warn_once(LayoutCause cause, const std::string& detail) {
  const uint32_t bit = 1u << static_cast<uint32_t>(cause);
  if ((warned_causes_ & bit) != 0) return;
  warned_causes_ |= bit;
  log::get(log::Component::ckpt)
      .warn(
          "{}: refusing a checkpoint version that claims to be sealed ({}: {}); further ones with this cause "
          "are not logged",
          rank_text(config_), name(cause), detail);
}

Result<SealedVersion> RankStore::view_of(uint32_t slot, DataCheck check) {
  const auto bytes = std::as_const(segments_[slot]).bytes();
  auto info = decode_version(bytes, check);
  if (!info) return fail(std::string(name(info.error().cause)) + ": " + info.error().detail);
  if (info->id.job != config_.job || info->id.rank != config_.rank) {
    return fail("slot " + std::to_string(slot) + " holds a version of rank " + std::to_string(info->id.rank) +
                " of job " + info->id.job);
  }
  SealedVersion v{.step = info->id.step,
                  .sequence = info->id.sequence,
                  .world = info->id.world,
                  .slot = slot,
                  .total_bytes = info->total_bytes,
                  .buffers = {}};
  for (const auto& b : info->buffers) v.buffers.push_back(ReadableBuffer{b.name, bytes.subspan(b.offset, b.size)});
  return v;
}

std::optional<std::span<const std::byte>> RankStore::sealed_segment(uint64_t step) {
  for (uint32_t k = 0; k < config_.slots; ++k) {
    if (in_progress_ && in_progress_->slot == k) continue;
    refresh_slot(k);
    if (!segments_[k].valid()) continue;
    const auto bytes = std::as_const(segments_[k]).bytes();
    auto info = decode_version(bytes, DataCheck::skip);
    if (info && info->id.job == config_.job && info->id.rank == config_.rank && info->id.step == step) return bytes;
  }
  return std::nullopt;
}

std::optional<uint32_t> RankStore::newest_slot(uint64_t* max_sequence) {
  std::optional<uint32_t> best;
  uint64_t best_sequence = 0;
  for (uint32_t k = 0; k < config_.slots; ++k) {
    if (in_progress_ && in_progress_->slot == k) continue;
    refresh_slot(k);
    if (!segments_[k].valid() || load_state(segments_[k].bytes()) != VersionState::sealed) continue;
    auto header = decode_version(segments_[k].bytes(), DataCheck::skip);
    if (!header) continue;
    const bool known = verified_[k] && verified_[k]->sequence == header->id.sequence;
    auto v = known ? view_of(k, DataCheck::skip) : view_of(k, DataCheck::verify);
    if (!v) continue;
    verified_[k] = Verified{v->sequence};
    if (max_sequence != nullptr && v->sequence > *max_sequence) *max_sequence = v->sequence;
    if (!best || v->sequence > best_sequence) {
      best = k;
      best_sequence = v->sequence;
    }
  }
  return best;
}

Result<std::vector<WritableBuffer>> RankStore::begin_save(uint64_t step, std::span<const BufferSpec> buffers) {
  if (in_progress_) {
    return fail("the save of step " + std::to_string(in_progress_->step) + " of " + rank_text(config_) +
                " is still in progress: commit or abandon it first");
  }
  auto plan = plan_layout(buffers);
  if (!plan) return fail(plan.error().message);

  adopt_prepared();
  uint64_t max_sequence = last_sequence_;
  const auto newest = newest_slot(&max_sequence);
  const uint32_t slot = next_target(newest);

  // The segment holds the version and, after it, its buffers' chunk crc lists (chunk_lists.hpp).
  std::vector<uint64_t> sizes;
  for (const auto& b : buffers) sizes.push_back(b.bytes);
  const ChunkLists lists(plan->total_bytes, sizes);
  const uint64_t segment_bytes = lists.segment_bytes();
  auto& seg = segments_[slot];
  if (!seg.valid()) {
    auto created = ShmSegment::open_or_create(names_[slot], segment_bytes);
    if (!created) {
      return fail("cannot hold step " + std::to_string(step) + " of " + rank_text(config_) + ": " +
                  created.error().message);
    }
    seg = std::move(*created);
  } else if (auto g = seg.grow(segment_bytes); !g) {
    return fail("cannot hold step " + std::to_string(step) + " of " + rank_text(config_) + ": " + g.error().message);
  }
  verified_[slot].reset();
  const uint64_t sequence = max_sequence + 1;
  const VersionIdentity id{config_.job, config_.rank, step, sequence, config_.world};
  if (auto b = begin_version(seg.bytes(), id, buffers, *plan); !b) return fail(b.error().message);
  last_sequence_ = sequence;

  Save save{slot, step, sequence, {}, std::vector<std::optional<uint32_t>>(buffers.size()), {}, {}, segment_bytes};
  std::vector<WritableBuffer> out;
  out.reserve(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    save.lists.push_back(lists.values(seg.bytes(), i));
    save.buffers.push_back(seg.bytes().subspan(plan->offsets[i], buffers[i].bytes));
    out.push_back(WritableBuffer{buffers[i].name, save.buffers.back()});
  }
  in_progress_ = std::move(save);
  return out;
}

uint32_t RankStore::next_target(std::optional<uint32_t> newest) const {
  std::optional<uint32_t> target;
  uint64_t target_sequence = UINT64_MAX;
  for (uint32_t k = 0; k < config_.slots; ++k) {
    if (newest && *newest == k) continue;
    uint64_t seq = 0;  // slots without a valid sealed version are the first to go
    if (segments_[k].valid() && load_state(segments_[k].bytes()) == VersionState::sealed) {
      auto h = decode_version(segments_[k].bytes(), DataCheck::skip);
      if (h) seq = h->id.sequence + 1;
    }
    if (!target || seq < target_sequence) {
      target = k;
      target_sequence = seq;
    }
  }
  return *target;  // slots >= 2, so at least one slot is not the newest
}

void RankStore::prepare(uint64_t total_bytes) {
  adopt_prepared();
  if (in_progress_) return;  // the save in progress has its memory; commit prepares the next one
  prepare_slot(next_target(newest_slot(nullptr)), total_bytes);
}

void RankStore::wait_prepared() {
  if (preparing_) preparing_->segment.wait();
}

void RankStore::prepare_slot(uint32_t slot, uint64_t total_bytes) {
  adopt_prepared();
  if (segments_[slot].valid() && segments_[slot].size() >= total_bytes) return;
  // The thread touches only its own mapping and the object's size: the slot's contents (perhaps an
  // older sealed version that readers still use) are left as they are, and growing never shrinks.
  preparing_ = Preparing{slot, std::async(std::launch::async, [name = names_[slot], total_bytes] {
                           return ShmSegment::open_or_create(name, total_bytes);
                         })};
}

void RankStore::adopt_prepared() {
  if (!preparing_) return;
  Preparing done = std::move(*preparing_);
  preparing_.reset();
  auto segment = done.segment.get();
  auto& log = log::get(log::Component::ckpt);
  if (!segment) {
    // The save itself will try again and report the error where it belongs.
    log.debug("{}: preparing slot {} failed: {}", rank_text(config_), done.slot, segment.error().message);
    return;
  }
  // Only while the name still leads to the object that was prepared (nothing unlinked it meanwhile).
  struct stat named {
  }, mapped{};
  if (::stat(("/dev/shm" + names_[done.slot]).c_str(), &named) != 0 || ::fstat(segment->fd(), &mapped) != 0 ||
      named.st_ino != mapped.st_ino || named.st_dev != mapped.st_dev) {
    return;
  }
  if (segments_[done.slot].valid() && segments_[done.slot].size() >= segment->size()) return;
  segments_[done.slot] = std::move(*segment);
}

Result<std::span<std::byte>> RankStore::save_buffer(size_t index, size_t size) const {
  if (!in_progress_) return fail("no save of " + rank_text(config_) + " is in progress to write a buffer into");
  const auto& save = *in_progress_;
  if (index >= save.buffers.size()) {
    return fail("buffer index " + std::to_string(index) + " out of range: the save of step " +
                std::to_string(save.step) + " has " + std::to_string(save.buffers.size()) + " buffers");
  }
  const auto dst = save.buffers[index];
  if (size != dst.size()) {
    return fail("buffer " + std::to_string(index) + " of the save of step " + std::to_string(save.step) + " holds " +
                std::to_string(dst.size()) + " bytes, got " + std::to_string(size));
  }
  return dst;
}

Status RankStore::write_buffer(size_t index, std::span<const std::byte> src) {
  auto dst = save_buffer(index, src.size());
  if (!dst) return fail(dst.error().message);
  in_progress_->checksums[index] = copy_with_checksum(*dst, src, in_progress_->lists[index]);
  return Ok{};
}

Status RankStore::copy_from_device(size_t index, const void* device_src, void* stream) {
  // The size is the buffer's own: a device pointer carries none to check against.
  const bool known = in_progress_ && index < in_progress_->buffers.size();
  auto dst = save_buffer(index, known ? in_progress_->buffers[index].size() : 0);
  if (!dst) return fail(dst.error().message);
  if (!device::compiled()) return device::synchronize(stream);  // fails, saying the build has no CUDA
  if (!device::is_device_pointer(device_src)) {
    return fail("buffer " + std::to_string(index) + " of the save of step " + std::to_string(in_progress_->step) +
                ": the source is not CUDA device memory (use write_buffer for host memory)");
  }
  auto& save = *in_progress_;
  if (auto p = segments_[save.slot].pin_for_device(); !p) return p;
  if (auto c = device::copy_to_host_async(*dst, device_src, stream); !c) return c;
  save.checksums[index] = std::nullopt;  // commit checksums what the device wrote
  if (std::find(save.streams.begin(), save.streams.end(), stream) == save.streams.end()) save.streams.push_back(stream);
  return Ok{};
}

Result<SealedVersion> RankStore::commit() {
  if (!in_progress_) return fail("no save of " + rank_text(config_) + " is in progress");
  const Save save = *std::exchange(in_progress_, std::nullopt);
  for (void* stream : save.streams) {
    if (auto w = device::synchronize(stream); !w) {
      return fail("step " + std::to_string(save.step) + " of " + rank_text(config_) +
                  " was not sealed: a device copy into it failed: " + w.error().message);
    }
  }
  // Buffers written otherwise than by write_buffer (a device copy, a caller's own writes into the span):
  // their lists and checksums in one pass now.
  auto checksums = save.checksums;
  for (size_t i = 0; i < checksums.size(); ++i) {
    if (checksums[i] || save.lists[i] == nullptr) continue;
    chunk_crc_values(save.buffers[i], save.lists[i]);
    checksums[i] = checksum_of_chunk_crcs({save.lists[i], chunk_count(save.buffers[i].size())});
  }
  if (auto s = seal_version(segments_[save.slot].bytes(), checksums); !s) {
    return fail("step " + std::to_string(save.step) + " of " + rank_text(config_) +
                " was not sealed: " + s.error().message);
  }
  // The checksums were computed from these very bytes a moment ago.
  verified_[save.slot] = Verified{save.sequence};
  log::get(log::Component::ckpt).debug("{}: sealed step {} in slot {}", rank_text(config_), save.step, save.slot);
  auto sealed = view_of(save.slot, DataCheck::skip);
  // The next save goes to another slot: ready its memory now, while the trainer computes.
  if (sealed) prepare_slot(next_target(save.slot), save.segment_bytes);
  return sealed;
}

void RankStore::abandon() {
  if (!in_progress_) return;
  // Device copies still in flight would land in the slot after a later save picked it again.
  for (void* stream : in_progress_->streams) (void)device::synchronize(stream);
  in_progress_.reset();
}

std::optional<SealedVersion> RankStore::newest_sealed() {
  for (uint32_t k = 0; k < config_.slots; ++k) {
    if (in_progress_ && in_progress_->slot == k) continue;
    refresh_slot(k);
  }
  // A reader always verifies the data: what it returns may be restored from.
  std::optional<SealedVersion> best;
  for (uint32_t k = 0; k < config_.slots; ++k) {
    if (in_progress_ && in_progress_->slot == k) continue;
    const auto& seg = segments_[k];
    if (!seg.valid() || load_state(seg.bytes()) != VersionState::sealed) continue;
    auto before = decode_version(seg.bytes(), DataCheck::skip);
    auto checked = before ? decode_version(seg.bytes(), DataCheck::verify) : before;
    // The seqlock's reader side: if a writer began rewriting the slot while we checked it, the state
    // or the sequence has moved, and a failed check means a torn read, not corruption.
    std::atomic_thread_fence(std::memory_order_acquire);
    if (load_state(seg.bytes()) != VersionState::sealed) continue;
    if (before) {
      auto after = decode_version(seg.bytes(), DataCheck::skip);
      if (!after || after->id.sequence != before->id.sequence) continue;
    }
    if (!checked) {
      ++refused_[static_cast<size_t>(checked.error().cause)];
      warn_once(checked.error().cause, "slot " + std::to_string(k) + ": " + checked.error().detail);
      continue;
    }
    auto v = view_of(k, DataCheck::skip);
    if (!v) {
      ++refused_[static_cast<size_t>(LayoutCause::malformed)];
      warn_once(LayoutCause::malformed, v.error().message);
      continue;
    }
    verified_[k] = Verified{v->sequence};
    if (!best || v->sequence > best->sequence) best = std::move(*v);
  }
  return best;
}

std::vector<SlotReport> RankStore::inspect() {
  std::vector<SlotReport> out;
  for (uint32_t k = 0; k < config_.slots; ++k) {
    if (!(in_progress_ && in_progress_->slot == k)) refresh_slot(k);
    SlotReport r;
    r.slot = k;
    r.segment_name = names_[k];
    if (segments_[k].valid()) {
      r.segment_bytes = segments_[k].size();
      r.version = decode_version(segments_[k].bytes(), DataCheck::skip);
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<HeldVersion> RankStore::held_versions() {
  std::vector<HeldVersion> out;
  for (const auto& r : inspect()) {
    if (r.segment_bytes == 0) continue;
    HeldVersion h{config_.job, config_.rank, 0, 0, r.segment_bytes, r.version.ok()};
    if (r.version) {
      h.step = r.version->id.step;
      h.sequence = r.version->id.sequence;
    }
    out.push_back(std::move(h));
  }
  return out;
}

Status RankStore::drop_slot(uint32_t slot) {
  if (slot >= config_.slots) return fail("slot " + std::to_string(slot) + " does not exist");
  if (in_progress_ && in_progress_->slot == slot) {
    return fail("slot " + std::to_string(slot) + " of " + rank_text(config_) + " holds the save in progress");
  }
  if (auto newest = newest_slot(nullptr); newest && *newest == slot) {
    return fail("slot " + std::to_string(slot) + " of " + rank_text(config_) +
                " holds the newest complete version, which is never dropped");
  }
  if (preparing_ && preparing_->slot == slot) {
    preparing_->segment.wait();  // its mapping goes with the name
    preparing_.reset();
  }
  segments_[slot] = ShmSegment{};
  verified_[slot].reset();
  return ShmSegment::unlink(names_[slot]);
}

}  // namespace shoal::ckpt

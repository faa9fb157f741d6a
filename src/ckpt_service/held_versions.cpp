// Looking up held versions by (job, rank, step) for the replicator, the fetch server and the persister.
#include "ckpt_service/held_versions.hpp"

#include <algorithm>

namespace shoal::ckpt_service {

std::vector<ckpt::HeldSegment> holding(std::vector<ckpt::HeldSegment> held, const std::string& job, uint32_t rank,
                                       uint64_t step) {
  std::erase_if(held, [&](const ckpt::HeldSegment& h) {
    return !h.version || h.version->id.job != job || h.version->id.rank != rank || h.version->id.step != step;
  });
  std::stable_sort(held.begin(), held.end(), [](const auto& a, const auto& b) { return !a.replica && b.replica; });
  return held;
}

std::optional<MappedVersion> map_version(const ckpt::HeldSegment& held, const std::string& job, uint32_t rank,
                                         uint64_t step, const ckpt::SegmentOwners& owners, bool populate) {
  const auto& owner = held.replica ? owners.replicas : owners.slots;
  auto seg = populate ? ckpt::ShmSegment::open_existing(held.segment, owner)
                      : ckpt::ShmSegment::open_for_reading(held.segment, owner);
  if (!seg) return std::nullopt;
  auto info = ckpt::decode_version(seg->bytes(), ckpt::DataCheck::skip);
  if (!info || info->id.job != job || info->id.rank != rank || info->id.step != step) return std::nullopt;
  return MappedVersion{std::move(*seg), std::move(*info)};
}

std::map<uint32_t, uint64_t> newest_local_steps(const std::vector<ckpt::HeldSegment>& held, const std::string& job) {
  std::map<uint32_t, uint64_t> newest;
  for (const auto& h : held) {
    if (h.replica || !h.version || h.version->id.job != job) continue;
    auto& step = newest[h.version->id.rank];
    step = std::max(step, h.version->id.step);
  }
  return newest;
}

}  // namespace shoal::ckpt_service

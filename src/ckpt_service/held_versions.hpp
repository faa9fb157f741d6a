// The local versions and replicas a host holds, as the agent's checkpoint threads look them up: which
// segments hold (job, rank, step), mapping one of them, and each local rank's newest sealed step.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ckpt_shm/held_scan.hpp"
#include "ckpt_shm/shm_segment.hpp"
#include "ckpt_shm/version_layout.hpp"

namespace shoal::ckpt_service {

// The held segments with a sealed version of (job, rank, step), local slots before replicas.
std::vector<ckpt::HeldSegment> holding(std::vector<ckpt::HeldSegment> held, const std::string& job, uint32_t rank,
                                       uint64_t step);

// A held segment mapped, with its version's layout as decoded when it was mapped.
struct MappedVersion {
  ckpt::ShmSegment segment;
  ckpt::VersionInfo info;
};

// Maps a held segment and checks that it still holds (job, rank, step): a trainer may have reused the
// slot since it was listed. Data checksums are not verified here: whoever consumes the bytes does. The
// segment must have been written by its kind's owner (segment_trust.hpp). populate: map every page at once
// (a whole version goes out); false for a reader of a part (ShmSegment::open_for_reading).
std::optional<MappedVersion> map_version(const ckpt::HeldSegment& held, const std::string& job, uint32_t rank,
                                         uint64_t step, const ckpt::SegmentOwners& owners = {}, bool populate = true);

// Rank -> the newest sealed step among the local slots (not replicas) of `job` in `held`.
std::map<uint32_t, uint64_t> newest_local_steps(const std::vector<ckpt::HeldSegment>& held, const std::string& job);

}  // namespace shoal::ckpt_service

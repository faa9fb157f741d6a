// What one host holds, found by listing /dev/shm: its ranks' own version slots and the replicas it
// keeps for peers, each described from its segment's header alone (no data is read). Stateless on
// purpose: the answer is right after an agent restart, and whoever wrote the segment (a trainer, the
// agent receiving a replica) needs to tell nobody.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ckpt_shm/segment_trust.hpp"
#include "ckpt_shm/version_layout.hpp"

namespace shoal::ckpt {

struct HeldSegment {
  std::string segment;  // the object's name, with its leading '/'
  bool replica = false;  // a peer's version kept here; false: a local rank's slot
  uint64_t segment_bytes = 0;
  // The version's identity and layout when its header and table are valid and sealed; the data's
  // checksums are not verified here (a reader verifies them when it loads).
  std::optional<VersionInfo> version;
  std::string problem;  // why `version` is empty: unsealed (a save in progress or abandoned), malformed...
  // Set when the object is not trusted (segment_trust.hpp: a link, a FIFO, another user's file): it is
  // listed, so that an operator sees it, but never read.
  std::optional<SegmentRefusal> refused;
};

// Every segment of `store` in `dir` (default /dev/shm), local slots and replicas, sorted by name. Each is
// opened without following links or blocking and read only when `owners` wrote it.
std::vector<HeldSegment> scan_held(std::string_view store, const std::string& dir = "/dev/shm",
                                   const SegmentOwners& owners = {});

// Reads the prefix of one segment (by object name) and decodes it; the problem when it is not a sealed
// version, or not one `owner` wrote (refused as truncated, its detail naming the refusal).
Result<VersionInfo, LayoutError> read_segment_prefix(const std::string& segment, const std::string& dir = "/dev/shm",
                                                     const SegmentOwner& owner = this_process_owner());

}  // namespace shoal::ckpt

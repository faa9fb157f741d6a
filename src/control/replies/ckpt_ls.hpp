// The `ckpt-ls` reply: the checkpoint versions this host holds in shared memory (its ranks' own and the
// replicas it keeps for peers), the service's counters, and what its persist directory holds:
//   {"job", "store", "replicas", "budget_bytes",
//    "held": [{"segment", "kind", "segment_bytes", "from"?, "sealed", "job"?, "rank"?, "step"?, "world"?,
//              "bytes"?, "buffers"?, "verified"?, "problem"?}...],
//    "counters": {...}, "refused_segments": {"symlink", "not_regular", "foreign_owner", "loose_mode"},
//    with a persist directory: "persist_dir", "persisted": [{"rank", "step", "world", "bytes", "path"}...],
//    "persist_counters": {...}, "persist_refused": {"unsafe_directory", "symlink", "not_regular",
//    "foreign_owner", "loose_mode", "oversized", "invalid"}}
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "control/replies/document.hpp"

namespace shoal::control {

// What a sealed segment holds; written flat into its HeldRow.
struct HeldVersion {
  std::string job;
  uint32_t rank = 0;
  uint64_t step = 0;
  uint32_t world = 0;
  uint64_t bytes = 0;
  uint64_t buffers = 0;
  bool operator==(const HeldVersion&) const = default;
};

struct HeldRow {
  std::string segment;
  std::string kind;  // local, replica
  uint64_t segment_bytes = 0;
  std::optional<std::string> from;     // sealed segments: a trainer here, or the peer that replicated it
  std::optional<HeldVersion> version;  // present exactly when sealed ("sealed": true)
  std::optional<bool> verified;        // sealed segments, with `ckpt-ls verify`
  std::optional<std::string> problem;  // why it is not sealed, or why verification failed
  bool sealed() const { return version.has_value(); }
  bool operator==(const HeldRow&) const = default;
};

struct CkptCounters {
  uint64_t pushed = 0, push_skipped = 0, push_failed = 0, push_superseded = 0, received = 0;
  uint64_t receive_refused = 0, fetches_served = 0, evicted = 0;
  bool operator==(const CkptCounters&) const = default;
};

// Objects named like this host's segments that the agent refused to open since it started: links, FIFOs,
// other users' files, modes others can read (ckpt_shm/segment_trust.hpp).
struct RefusedSegments {
  uint64_t symlink = 0, not_regular = 0, foreign_owner = 0, loose_mode = 0;
  bool operator==(const RefusedSegments&) const = default;
};

struct PersistedRow {
  uint32_t rank = 0;
  uint64_t step = 0;
  uint32_t world = 0;
  uint64_t bytes = 0;
  std::string path;
  bool operator==(const PersistedRow&) const = default;
};

struct PersistCountersRow {
  uint64_t persisted = 0, bytes = 0, refused = 0, cancelled = 0, failed = 0, removed = 0;
  bool busy = false;  // a version is being written now
  bool operator==(const PersistCountersRow&) const = default;
};

// Files and directories of the persist directory that the agent refused since it started: links, FIFOs,
// other users' files, loose modes, oversized or forged files (ckpt_shm/persist_trust.hpp).
struct RefusedPersisted {
  uint64_t unsafe_directory = 0, symlink = 0, not_regular = 0, foreign_owner = 0, loose_mode = 0, oversized = 0,
           invalid = 0;
  bool operator==(const RefusedPersisted&) const = default;
};

// The persist directory's part of the reply; written flat as persist_dir, persisted, persist_counters,
// persist_refused.
struct PersistSection {
  std::string dir;
  std::vector<PersistedRow> files;
  PersistCountersRow counters;
  RefusedPersisted refused;
  bool operator==(const PersistSection&) const = default;
};

struct CkptLsReply {
  static constexpr const char* kWhat = "a checkpoint listing";
  static constexpr std::array kRequiredKeys{"job", "held"};
  std::string job;
  std::string store;
  uint32_t replicas = 0;
  uint64_t budget_bytes = 0;
  std::vector<HeldRow> held;
  CkptCounters counters;
  RefusedSegments refused_segments;
  std::optional<PersistSection> persist;  // with --ckpt-dir
  bool operator==(const CkptLsReply&) const = default;
};

void to_json(Json& j, const HeldRow& r);
void from_json(const Json& j, HeldRow& r);
void to_json(Json& j, const CkptCounters& r);
void from_json(const Json& j, CkptCounters& r);
void to_json(Json& j, const RefusedSegments& r);
void from_json(const Json& j, RefusedSegments& r);
void to_json(Json& j, const PersistedRow& r);
void from_json(const Json& j, PersistedRow& r);
void to_json(Json& j, const PersistCountersRow& r);
void from_json(const Json& j, PersistCountersRow& r);
void to_json(Json& j, const RefusedPersisted& r);
void from_json(const Json& j, RefusedPersisted& r);
void to_json(Json& j, const CkptLsReply& r);
void from_json(const Json& j, CkptLsReply& r);

}  // namespace shoal::control

// Ranged reads of one saved rank's version (Session::read_ranges): the caller's named ranges resolved
// against the version's table, read from a copy in this host's memory or fetched from a peer's agent
// (FETCH_RANGES), each 64 KiB chunk verified before any of its bytes reach the caller's memory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ckpt_service/transfer.hpp"
#include "ckpt_shm/chunk_ranges.hpp"
#include "ckpt_shm/version_layout.hpp"
#include "shoal/checkpoint.hpp"

namespace shoal::session {

struct RangedRead {
  std::string job;
  uint32_t rank = 0;  // the saved rank whose version is read
  uint64_t step = 0;
  const std::vector<ByteRange>* ranges = nullptr;  // empty: only the table is wanted
};

enum class RangedOutcome {
  read,         // every range copied, verified
  not_held,     // no copy there (or the connection failed): try the next holder
  refused,      // a copy failed verification: counted, the next holder is tried
  bad_request,  // the ranges do not fit the version's table: the caller's error, no holder will do
};

struct RangedResult {
  RangedOutcome outcome = RangedOutcome::not_held;
  std::string message;  // why, when not read
  std::optional<ckpt::VersionInfo> info;
};

// The caller's ranges as buffer indexes of `info`, in their order; fails naming an unknown buffer, a range
// outside its buffer or too many ranges.
Result<std::vector<ckpt::BufferByteRange>> resolve_ranges(const ckpt::VersionInfo& info,
                                                          const std::vector<ByteRange>& ranges);

// Copies into each range's destination the part of a verified piece (bytes [offset, offset + size) of
// buffer `buffer`) that the range covers.
void scatter_piece(const std::vector<ckpt::BufferByteRange>& resolved, const std::vector<ByteRange>& ranges,
                   uint32_t buffer, uint64_t offset, std::span<const std::byte> piece);

// From this host's shared memory (segments of `store`: local slots and replicas).
RangedResult read_ranges_local(const RangedRead& read, const std::string& store);
// From the agent at `peer`; `max_bytes` is what the reports promised for the version there.
RangedResult read_ranges_peer(const RangedRead& read, const ckpt_service::TransferPeer& peer, uint64_t max_bytes);

}  // namespace shoal::session

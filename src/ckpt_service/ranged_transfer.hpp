// Ranged fetches over the CKPT_STREAM channel (FETCH_RANGES in proto/ckpt.proto): a reader that needs
// only some byte ranges of one saved rank's version (a restore onto another world) gets the version's
// prefix, asks for the 64 KiB chunks covering its ranges, and receives each requested buffer's chunk
// crcs followed by those chunks. It checks the crc list against the sealed prefix's buffer checksum and
// every chunk against its crc before a byte of it is handed on; only the needed chunks cross the network.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "ckpt_service/transfer.hpp"
#include "ckpt_shm/chunk_ranges.hpp"
#include "ckpt_shm/version_layout.hpp"

namespace shoal::ckpt_service {

// The most bytes the client's CkptRanges frame may have (kMaxReadRanges runs of three varints).
inline constexpr size_t kMaxRangesFrameBytes = size_t{2} << 20;

// The chunks a ranged read verifies at once, received (or copied out of a segment) into a scratch slice,
// checked, then scattered: 256 KiB, so that the slice is still in the core's L2 cache when it is checked and
// copied on (a 4 MiB slice went to memory and came back twice).
inline constexpr uint64_t kVerifySliceChunks = 4;

// Asked once the version's prefix is verified: the chunk runs to fetch (plan_chunk_runs), possibly none.
using RangePlanner = std::function<Result<std::vector<ckpt::ChunkRun>>(const ckpt::VersionInfo& info)>;
// Given every verified piece of a run, in stream order: bytes [offset, offset + bytes.size()) of buffer
// `buffer`, chunk aligned at its start. The span is valid during the call only.
using RangeSink = std::function<void(uint32_t buffer, uint64_t offset, std::span<const std::byte> bytes)>;

// Fetches the prefix of (job, rank, step) from `peer`, then the runs `plan` names, verified as they
// arrive. limits.max_stream_bytes bounds the prefix and the version's total_bytes (what the reports
// promised). Returns the version's description; a failure names what did not verify (`refused` set
// then, for the caller's count: a chunk, a crc list, the prefix or the identity that did not check out).
struct RangedFetchError {
  std::string message;
  bool refused = false;  // verification failed (as opposed to a connection, a peer without the version)
};
Result<ckpt::VersionInfo, RangedFetchError> fetch_ranges(const TransferPeer& peer, std::string_view job,
                                                         uint32_t rank, uint64_t step, const RangePlanner& plan,
                                                         const RangeSink& sink, const TransferLimits& limits);

// The server half, on a connection taken over after its request frame: `segment` is the held version's
// whole segment (the chunk lists it keeps after the version included: chunk_lists.hpp) and `info` its
// description (null: NOT_HELD). Refuses runs that check_chunk_runs refuses.
Status serve_fetch_ranges(net::BlockingConn& conn, std::span<const std::byte> segment, const ckpt::VersionInfo* info,
                          const TransferLimits& limits);

}  // namespace shoal::ckpt_service

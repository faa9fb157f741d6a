// Moving one checkpoint version between hosts over the CKPT_STREAM channel (proto/ckpt.proto): the
// client halves (push a replica, fetch a version) and the server halves, all blocking, for threads
// of their own. Bytes go straight from one host's shared memory to the socket and from the socket into
// the other host's shared memory; the receiver verifies every checksum as the data arrives, and seals
// what it received only when all of it checked out. In a keyed cluster the bytes travel as sealed data
// frames (net/blocking_conn.hpp): sealed slice by slice on the way out, opened in place in the
// destination on the way in, before the checksums run.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "ckpt.pb.h"
#include "ckpt_shm/version_layout.hpp"
#include "ckpt_shm/version_stream.hpp"
#include "net/blocking_conn.hpp"
#include "net/stream_hello.hpp"

namespace shoal::ckpt_service {

// A request larger than this is refused before it is read.
inline constexpr size_t kMaxCkptRequestBytes = 4096;

struct TransferPeer {
  std::string addr;          // "ip:port" of the agent serving the host
  net::OutgoingHello hello;  // the CKPT_STREAM hello naming the caller
};

// When each phase of one transfer ended, for logs and shoal-bench-ckpt's breakdown of where the time
// goes. A phase the transfer did not reach keeps its default (epoch) value.
struct TransferPhases {
  using Clock = std::chrono::steady_clock;
  Clock::time_point started;   // connecting began
  Clock::time_point answered;  // the peer accepted the push, or announced the fetched version
  Clock::time_point attached;  // receiving: the prefix checked out and the destination was ready
  Clock::time_point streamed;  // the version's last byte was written (push) or received and verified (fetch)
  Clock::time_point done;      // push: the peer said it stored the version; fetch: as streamed
};

// The floor rate of a whole transfer's deadline: 16 MiB/s (134 Mbit/s), far below any network a
// training cluster runs on and below a sealed stream on one busy core, so only a peer that holds a
// transfer open on purpose (or a link that is all but dead) meets it.
inline constexpr uint64_t kTransferFloorBytesPerS = 16u << 20;

struct TransferLimits {
  // A transfer fails when no byte moves for this long (a dead or wedged peer).
  std::chrono::milliseconds stall_timeout{10'000};
  // And the whole transfer must end within whole_allowance + announced bytes / floor_bytes_per_s of its
  // start, however steadily its bytes trickle: a peer sending one byte just inside each stall_timeout
  // would otherwise hold a transfer thread and the destination's /dev/shm reservation forever. The
  // allowance covers connecting, the answers and a slow start. (Tests shorten both.)
  uint64_t floor_bytes_per_s = kTransferFloorBytesPerS;
  std::chrono::milliseconds whole_allowance{30'000};
  // A fetch refuses, before any of the version's bytes are read or their memory allocated, a version
  // whose stream the peer announces longer than this (the restore passes what the view's reports promised
  // for that rank and step): a peer's word alone never sizes an allocation.
  uint64_t max_stream_bytes = UINT64_MAX;
  const std::atomic<bool>* cancel = nullptr;  // polled between chunks; may be null
  TransferPhases* phases = nullptr;           // filled in when not null
};

// Where received bytes go, asked once the version's prefix has been verified and its size is known:
// a span of info.total_bytes (a new shared-memory segment, a caller's buffer).
using ReceiveDestination = std::function<Result<std::span<std::byte>>(const ckpt::VersionInfo& info)>;

enum class PushOutcome { stored, already_held };

// Streams a sealed version (its whole segment, mapped by the caller) to `peer` to keep as a replica,
// sent from the mapping (transfer.cpp says why not sendfile).
Result<PushOutcome> push_version(const TransferPeer& peer, std::span<const std::byte> segment,
                                 const ckpt::VersionInfo& info, const TransferLimits& limits);

// Fetches (job, rank, step) from `peer` into the destination; returns the verified, sealed version's
// description (its bytes are in the destination).
Result<ckpt::VersionInfo> fetch_version(const TransferPeer& peer, std::string_view job, uint32_t rank, uint64_t step,
                                        const ReceiveDestination& destination, const TransferLimits& limits);

// Where a scattered fetch puts the version's buffers, each into memory of its own (a restore straight
// into a trainer's tensors): asked for the destinations of buffers first, first + 1, ... (one span per
// buffer, exactly its size; at least one) when the prefix is verified (first = 0), and again whenever
// the buffers given so far have arrived and matched their checksums -- their bytes can be read through
// receiver.buffer_destination(i) then, e.g. a description of the others in buffer 0.
using ScatterDestination = std::function<Result<std::vector<std::span<std::byte>>>(
    const ckpt::VersionInfo& info, size_t first, const ckpt::VersionReceiver& receiver)>;
// fetch_version without a segment: every buffer lands in its own destination, verified as it arrives;
// the version's identity is checked before any byte is placed.
Result<ckpt::VersionInfo> fetch_version_scattered(const TransferPeer& peer, std::string_view job, uint32_t rank,
                                                  uint64_t step, const ScatterDestination& destination,
                                                  const TransferLimits& limits);

// Server halves, on a connection taken over after its request frame.
//   serve_push: `accept` answers whether to take the version (an error: REFUSED with its message;
//     false: ALREADY_HELD); `destination` gives the memory; `kept` runs after a verified receipt and
//     says whether the version was kept (its error is sent as REFUSED). Returns what happened, for the log.
Result<ckpt::VersionInfo> serve_push(net::BlockingConn& conn, const wire::CkptRequest& request,
                                     const std::function<Result<bool>()>& accept, const ReceiveDestination& destination,
                                     const std::function<Status(const ckpt::VersionInfo&)>& kept,
                                     const TransferLimits& limits);
//   serve_fetch: `segment` is the held version's whole segment (empty: NOT_HELD).
Status serve_fetch(net::BlockingConn& conn, std::span<const std::byte> segment, const ckpt::VersionInfo* info,
                   const TransferLimits& limits);

// The pieces the ranged fetch (ranged_transfer.hpp) shares: a connection opened with its request sent,
// and one response frame read, each within limits.stall_timeout.
Result<net::BlockingConn> open_ckpt_connection(const TransferPeer& peer, const wire::CkptRequest& request,
                                               const TransferLimits& limits);
Result<wire::CkptResponse> read_ckpt_response(net::BlockingConn& conn, const TransferLimits& limits, const char* when);

// Sends a response frame (used for refusals before any transfer).
Status send_ckpt_response(net::BlockingConn& conn, wire::CkptResponse::Status status, const std::string& message,
                          const TransferLimits& limits, uint64_t stream_bytes = 0);

}  // namespace shoal::ckpt_service

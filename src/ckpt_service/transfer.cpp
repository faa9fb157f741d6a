// Checkpoint transfers over one TCP connection each: frames for the requests and answers, raw bytes
// for the version itself (sealed data frames in a keyed cluster, opened in place where they land).
#include "ckpt_service/transfer.hpp"

#include <algorithm>
#include <string>

#include "ckpt_shm/version_stream.hpp"
#include "net/blocking_open.hpp"
#include "net/stream_hello.hpp"

namespace shoal::ckpt_service {
namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point stall_deadline(const TransferLimits& limits) { return Clock::now() + limits.stall_timeout; }

// When a whole transfer of `bytes` that began at `start` must have ended (transfer.hpp: TransferLimits).
struct WholeDeadline {
  Clock::time_point at;
  uint64_t bytes = 0;

  WholeDeadline(const TransferLimits& limits, uint64_t stream_bytes, Clock::time_point start) : bytes(stream_bytes) {
    const uint64_t floor = std::max<uint64_t>(limits.floor_bytes_per_s, 1);
    // Milliseconds, saturating well before the clock's range ends: an absurd announced size is refused
    // elsewhere, and must not overflow here.
    const uint64_t ms =
        std::min<uint64_t>(stream_bytes / floor * 1000 + stream_bytes % floor * 1000 / floor, uint64_t{1} << 40);
    at = start + limits.whole_allowance + std::chrono::milliseconds(ms);
  }
  // The deadline of one read or write: no progress for stall_timeout, or the whole transfer's end.
  Clock::time_point step(const TransferLimits& limits) const { return std::min(stall_deadline(limits), at); }
  bool passed() const { return Clock::now() >= at; }
  std::string why(const TransferLimits& limits) const {
    return "the whole transfer of " + std::to_string(bytes) + " bytes did not finish within its deadline (" +
           std::to_string(limits.whole_allowance.count()) + " ms + the bytes at " +
           std::to_string(limits.floor_bytes_per_s) + " B/s)";
  }
};

void mark(const TransferLimits& limits, Clock::time_point TransferPhases::*phase) {
  if (limits.phases != nullptr) limits.phases->*phase = Clock::now();
}

std::vector<std::byte> encode(const google::protobuf::MessageLite& m) {
  std::vector<std::byte> out(m.ByteSizeLong());
  m.SerializeToArray(out.data(), static_cast<int>(out.size()));
  return out;
}

Result<wire::CkptResponse> read_response(net::BlockingConn& conn, const TransferLimits& limits, const char* when) {
  auto frame = conn.read_frame(kMaxCkptRequestBytes, stall_deadline(limits));
  if (!frame) return fail(std::string("no answer ") + when + ": " + frame.error().message);
  if (frame->type != wire::type_byte(wire::FrameType::response)) {
    return fail(std::string("unexpected frame type ") + std::to_string(frame->type) + " " + when);
  }
  wire::CkptResponse r;
  if (!r.ParseFromArray(frame->payload.data(), static_cast<int>(frame->payload.size()))) {
    return fail(std::string("a malformed answer ") + when);
  }
  return r;
}

// Writes the version's stream: its prefix, then each buffer's bytes, with send() straight from the
// mapping. Why not sendfile from the segment's descriptor: measured on this project's machines (Linux
// 6.18, loopback, 1 GiB from /dev/shm into a ready buffer), sendfile ran at 1.6-2.0 GB/s against
// 2.2-2.4 GB/s for send() from the mapping: tmpfs hands splice a copy, so the "zero-copy" path is the
// slow one. And the data passing through user space in slices is what sealing the stream needs: each
// slice can be encrypted on its way out at the cipher's own cost, which sendfile could never offer.
Status send_stream(net::BlockingConn& conn, std::span<const std::byte> segment, const ckpt::VersionInfo& info,
                   const TransferLimits& limits, const WholeDeadline& whole) {
  // Writes of at most this much each, so the stall deadline means "no progress", not "slow". 4 MiB is
  // also what the raw TCP baseline writes (shoal-bench-ckpt); larger writes measured no faster.
  constexpr size_t kSlice = 4u << 20;
  for (const auto piece : ckpt::stream_pieces(segment, info)) {
    for (size_t off = 0; off < piece.size(); off += kSlice) {
      const auto part = piece.subspan(off, std::min(kSlice, piece.size() - off));
      if (auto r = conn.write_data(part, whole.step(limits)); !r) {
        return whole.passed() ? fail(whole.why(limits)) : r;
      }
    }
  }
  return Ok{};
}

// Reads a version's stream of `stream_bytes` bytes, verifying it; `place` gives the receiver its
// destination(s) whenever it asks (once for a segment, more often for a scattered receive).
Result<ckpt::VersionInfo> receive_stream(net::BlockingConn& conn, uint64_t stream_bytes,
                                         const std::function<Status(ckpt::VersionReceiver&)>& place,
                                         const TransferLimits& limits, Clock::time_point start) {
  const WholeDeadline whole(limits, stream_bytes, start);
  ckpt::VersionReceiver receiver(stream_bytes);  // nothing beyond what was announced is allocated
  while (true) {
    if (receiver.complete()) {  // a version without data bytes completes at attach
      mark(limits, &TransferPhases::streamed);
      return receiver.info();
    }
    const auto into = receiver.next();
    if (into.empty()) return fail("the receiver expects no more bytes before it is complete");
    auto n = conn.read_data(into, whole.step(limits));
    if (!n) return fail(whole.passed() ? whole.why(limits) : n.error().message);
    auto progress = receiver.advance(*n);
    if (!progress) {
      return fail(std::string("refused: ") + std::string(ckpt::name(progress.error().cause)) + ": " +
                  progress.error().detail);
    }
    if (*progress == ckpt::VersionReceiver::Progress::need_destination) {
      if (receiver.expected() != stream_bytes) {
        return fail("the stream announced " + std::to_string(stream_bytes) + " bytes but its version has " +
                    std::to_string(receiver.expected()));
      }
      if (auto a = place(receiver); !a) return fail(a.error().message);
      mark(limits, &TransferPhases::attached);
    } else if (*progress == ckpt::VersionReceiver::Progress::complete) {
      mark(limits, &TransferPhases::streamed);
      return receiver.info();
    }
  }
}

// The receiver's one destination, a segment or a caller's buffer.
std::function<Status(ckpt::VersionReceiver&)> into_one(const ReceiveDestination& destination) {
  return [&destination](ckpt::VersionReceiver& receiver) -> Status {
    auto dest = destination(receiver.info());
    if (!dest) return fail(dest.error().message);
    return receiver.attach(*dest);
  };
}

Result<net::BlockingConn> open(const TransferPeer& peer, const wire::CkptRequest& request,
                               const TransferLimits& limits) {
  mark(limits, &TransferPhases::started);
  auto conn = net::open_blocking(peer.addr, peer.hello, stall_deadline(limits), limits.cancel);
  if (!conn) return conn;
  if (auto r = conn->write_frame(wire::type_byte(wire::FrameType::request), encode(request), stall_deadline(limits));
      !r) {
    return fail(r.error().message);
  }
  return conn;
}

}  // namespace

Result<net::BlockingConn> open_ckpt_connection(const TransferPeer& peer, const wire::CkptRequest& request,
                                               const TransferLimits& limits) {
  return open(peer, request, limits);
}

Result<wire::CkptResponse> read_ckpt_response(net::BlockingConn& conn, const TransferLimits& limits, const char* when) {
  return read_response(conn, limits, when);
}

Status send_ckpt_response(net::BlockingConn& conn, wire::CkptResponse::Status status, const std::string& message,
                          const TransferLimits& limits, uint64_t stream_bytes) {
  wire::CkptResponse r;
  r.set_status(status);
  r.set_message(message);
  r.set_stream_bytes(stream_bytes);
  return conn.write_frame(wire::type_byte(wire::FrameType::response), encode(r), stall_deadline(limits));
}

Result<PushOutcome> push_version(const TransferPeer& peer, std::span<const std::byte> segment,
                                 const ckpt::VersionInfo& info, const TransferLimits& limits) {
  wire::CkptRequest request;
  request.set_kind(wire::CkptRequest::PUSH);
  request.set_job(info.id.job);
  request.set_rank(info.id.rank);
  request.set_step(info.id.step);
  request.set_stream_bytes(ckpt::stream_bytes(info));
  const auto start = Clock::now();
  auto conn = open(peer, request, limits);
  if (!conn) return fail(conn.error().message);
  auto first = read_response(*conn, limits, "to the push");
  if (!first) return fail(first.error().message);
  if (first->status() == wire::CkptResponse::ALREADY_HELD) return PushOutcome::already_held;
  if (first->status() != wire::CkptResponse::ACCEPT) return fail("refused: " + first->message());
  mark(limits, &TransferPhases::answered);
  if (auto r = send_stream(*conn, segment, info, limits, WholeDeadline(limits, request.stream_bytes(), start)); !r) {
    return fail(r.error().message);
  }
  mark(limits, &TransferPhases::streamed);
  auto last = read_response(*conn, limits, "after the stream");
  if (!last) return fail(last.error().message);
  if (last->status() != wire::CkptResponse::STORED) return fail("refused: " + last->message());
  mark(limits, &TransferPhases::done);
  return PushOutcome::stored;
}

namespace {

// A fetch, with the version's identity checked before any of its bytes are placed.
Result<ckpt::VersionInfo> fetch_with(const TransferPeer& peer, std::string_view job, uint32_t rank, uint64_t step,
                                     const std::function<Status(ckpt::VersionReceiver&)>& place,
                                     const TransferLimits& limits) {
  wire::CkptRequest request;
  request.set_kind(wire::CkptRequest::FETCH);
  request.set_job(std::string(job));
  request.set_rank(rank);
  request.set_step(step);
  const auto start = Clock::now();
  auto conn = open(peer, request, limits);
  if (!conn) return fail(conn.error().message);
  auto answer = read_response(*conn, limits, "to the fetch");
  if (!answer) return fail(answer.error().message);
  if (answer->status() == wire::CkptResponse::NOT_HELD) {
    return fail(peer.addr + " does not hold rank " + std::to_string(rank) + " step " + std::to_string(step));
  }
  if (answer->status() != wire::CkptResponse::OK) return fail("refused: " + answer->message());
  if (answer->stream_bytes() > limits.max_stream_bytes) {
    return fail(peer.addr + " announced rank " + std::to_string(rank) + " step " + std::to_string(step) + " as " +
                std::to_string(answer->stream_bytes()) + " bytes, more than the " +
                std::to_string(limits.max_stream_bytes) + " its holders reported: refused before reading it");
  }
  mark(limits, &TransferPhases::answered);
  const auto checked = [&](ckpt::VersionReceiver& receiver) -> Status {
    const auto& id = receiver.info().id;
    if (id.job != job || id.rank != rank || id.step != step) {
      return fail("the peer sent rank " + std::to_string(id.rank) + " step " + std::to_string(id.step) + " of job " +
                  id.job + " instead");
    }
    return place(receiver);
  };
  auto info = receive_stream(*conn, answer->stream_bytes(), checked, limits, start);
  if (!info) return info;
  if (limits.phases != nullptr) limits.phases->done = limits.phases->streamed;
  return info;
}

}  // namespace

Result<ckpt::VersionInfo> fetch_version(const TransferPeer& peer, std::string_view job, uint32_t rank, uint64_t step,
                                        const ReceiveDestination& destination, const TransferLimits& limits) {
  return fetch_with(peer, job, rank, step, into_one(destination), limits);
}

Result<ckpt::VersionInfo> fetch_version_scattered(const TransferPeer& peer, std::string_view job, uint32_t rank,
                                                  uint64_t step, const ScatterDestination& destination,
                                                  const TransferLimits& limits) {
  const auto place = [&](ckpt::VersionReceiver& receiver) -> Status {
    const size_t first = receiver.buffers_attached();
    auto spans = destination(receiver.info(), first, receiver);
    if (!spans) return fail(spans.error().message);
    if (spans->empty()) return fail("no destination for buffer " + std::to_string(first));
    return receiver.attach_buffers(first, std::move(*spans));
  };
  return fetch_with(peer, job, rank, step, place, limits);
}

Result<ckpt::VersionInfo> serve_push(net::BlockingConn& conn, const wire::CkptRequest& request,
                                     const std::function<Result<bool>()>& accept, const ReceiveDestination& destination,
                                     const std::function<Status(const ckpt::VersionInfo&)>& kept,
                                     const TransferLimits& limits) {
  const auto start = Clock::now();
  auto take = accept();
  if (!take) {
    (void)send_ckpt_response(conn, wire::CkptResponse::REFUSED, take.error().message, limits);
    return fail(take.error().message);
  }
  if (!*take) {
    (void)send_ckpt_response(conn, wire::CkptResponse::ALREADY_HELD, "", limits);
    return fail("already held");
  }
  if (auto r = send_ckpt_response(conn, wire::CkptResponse::ACCEPT, "", limits); !r) return fail(r.error().message);
  const auto checked = [&](const ckpt::VersionInfo& info) -> Result<std::span<std::byte>> {
    if (info.id.job != request.job() || info.id.rank != request.rank() || info.id.step != request.step()) {
      return fail("the stream holds rank " + std::to_string(info.id.rank) + " step " + std::to_string(info.id.step) +
                  ", not the announced rank " + std::to_string(request.rank()) + " step " +
                  std::to_string(request.step()));
    }
    return destination(info);
  };
  auto info = receive_stream(conn, request.stream_bytes(), into_one(checked), limits, start);
  if (!info) {
    (void)send_ckpt_response(conn, wire::CkptResponse::REFUSED, info.error().message, limits);
    return info;
  }
  if (auto k = kept(*info); !k) {
    (void)send_ckpt_response(conn, wire::CkptResponse::REFUSED, k.error().message, limits);
    return fail(k.error().message);
  }
  if (auto r = send_ckpt_response(conn, wire::CkptResponse::STORED, "", limits); !r) return fail(r.error().message);
  return info;
}

Status serve_fetch(net::BlockingConn& conn, std::span<const std::byte> segment, const ckpt::VersionInfo* info,
                   const TransferLimits& limits) {
  if (info == nullptr || segment.empty()) {
    return send_ckpt_response(conn, wire::CkptResponse::NOT_HELD, "", limits);
  }
  const auto start = Clock::now();
  const uint64_t bytes = ckpt::stream_bytes(*info);
  if (auto r = send_ckpt_response(conn, wire::CkptResponse::OK, "", limits, bytes); !r) return r;
  return send_stream(conn, segment, *info, limits, WholeDeadline(limits, bytes, start));
}

}  // namespace shoal::ckpt_service

// FETCH_RANGES, both halves: the prefix, the client's chunk runs, then crc lists and chunks, each
// verified by the client before it is handed on.
#include "ckpt_service/ranged_transfer.hpp"

#include <algorithm>
#include <string>

#include "ckpt_shm/chunk_lists.hpp"

namespace shoal::ckpt_service {
namespace {

using Clock = std::chrono::steady_clock;

// A transfer's deadlines: no progress for stall_timeout, or past whole_allowance + bytes at the floor rate.
struct Deadlines {
  const TransferLimits& limits;
  Clock::time_point whole;

  Deadlines(const TransferLimits& l, Clock::time_point start) : limits(l), whole(start + l.whole_allowance) {}
  void add_bytes(uint64_t bytes) {
    const uint64_t floor = std::max<uint64_t>(limits.floor_bytes_per_s, 1);
    whole += std::chrono::milliseconds(std::min<uint64_t>(bytes / floor * 1000 + bytes % floor * 1000 / floor,
                                                          uint64_t{1} << 40));
  }
  Clock::time_point step() const { return std::min(Clock::now() + limits.stall_timeout, whole); }
};

Status read_all(net::BlockingConn& conn, std::span<std::byte> into, const Deadlines& d) {
  size_t filled = 0;
  while (filled < into.size()) {
    auto n = conn.read_data(into.subspan(filled), d.step());
    if (!n) return fail(Clock::now() >= d.whole ? std::string("the ranged fetch did not finish within its deadline")
                                                 : n.error().message);
    filled += *n;
  }
  return Ok{};
}

Status write_all(net::BlockingConn& conn, std::span<const std::byte> bytes, const Deadlines& d) {
  constexpr size_t kSlice = 4u << 20;  // so that a stall deadline means "no progress" (transfer.cpp)
  for (size_t off = 0; off < bytes.size(); off += kSlice) {
    if (auto r = conn.write_data(bytes.subspan(off, std::min(kSlice, bytes.size() - off)), d.step()); !r) return r;
  }
  return Ok{};
}

std::vector<uint64_t> sizes_of(const ckpt::VersionInfo& info) {
  std::vector<uint64_t> sizes;
  for (const auto& b : info.buffers) sizes.push_back(b.size);
  return sizes;
}

}  // namespace

Result<ckpt::VersionInfo, RangedFetchError> fetch_ranges(const TransferPeer& peer, std::string_view job,
                                                         uint32_t rank, uint64_t step, const RangePlanner& plan,
                                                         const RangeSink& sink, const TransferLimits& limits) {
  const auto err = [](std::string message, bool refused = false) {
    return fail(RangedFetchError{std::move(message), refused});
  };
  const std::string what = "rank " + std::to_string(rank) + " step " + std::to_string(step);
  wire::CkptRequest request;
  request.set_kind(wire::CkptRequest::FETCH_RANGES);
  request.set_job(std::string(job));
  request.set_rank(rank);
  request.set_step(step);
  Deadlines deadlines(limits, Clock::now());
  auto conn = open_ckpt_connection(peer, request, limits);
  if (!conn) return err(conn.error().message);
  auto answer = read_ckpt_response(*conn, limits, "to the ranged fetch");
  if (!answer) return err(answer.error().message);
  if (answer->status() == wire::CkptResponse::NOT_HELD) return err(peer.addr + " does not hold " + what);
  if (answer->status() != wire::CkptResponse::OK) return err("refused: " + answer->message());
  // The prefix: bounded before it is allocated, then decoded and checked like a fetched version's.
  const uint64_t prefix_bytes = answer->stream_bytes();
  if (prefix_bytes < ckpt::kHeaderBytes || prefix_bytes > ckpt::kMaxPrefixBytes ||
      prefix_bytes > limits.max_stream_bytes) {
    return err(peer.addr + " announced a prefix of " + std::to_string(prefix_bytes) + " bytes for " + what +
                   " (the reports promised at most " + std::to_string(limits.max_stream_bytes) + ")",
               true);
  }
  deadlines.add_bytes(prefix_bytes);
  std::vector<std::byte> prefix(prefix_bytes);
  if (auto r = read_all(*conn, prefix, deadlines); !r) return err(r.error().message);
  auto info = ckpt::decode_prefix(prefix);
  if (!info) return err("the prefix of " + what + " from " + peer.addr + " was refused: " + info.error().detail, true);
  if (info->data_offset != prefix_bytes || info->id.job != job || info->id.rank != rank || info->id.step != step) {
    return err(peer.addr + " sent another version's prefix (rank " + std::to_string(info->id.rank) + " step " +
                   std::to_string(info->id.step) + ") for " + what,
               true);
  }
  if (info->total_bytes > limits.max_stream_bytes) {
    return err(peer.addr + " holds " + what + " as " + std::to_string(info->total_bytes) +
                   " bytes, more than the reports promised (" + std::to_string(limits.max_stream_bytes) + ")",
               true);
  }
  auto runs = plan(*info);
  if (!runs) return err(runs.error().message);
  // The runs the plan gives are checked here too: what goes out is what the server will accept.
  const auto sizes = sizes_of(*info);
  if (auto c = ckpt::check_chunk_runs(sizes, *runs); !c) return err("a bad plan: " + c.error().message);
  wire::CkptRanges ask;
  for (const auto& r : *runs) {
    auto* w = ask.add_runs();
    w->set_buffer(r.buffer);
    w->set_first_chunk(r.first_chunk);
    w->set_chunks(r.chunks);
  }
  std::vector<std::byte> frame(ask.ByteSizeLong());
  ask.SerializeToArray(frame.data(), static_cast<int>(frame.size()));
  if (auto w = conn->write_frame(wire::type_byte(wire::FrameType::request), frame, deadlines.step()); !w) {
    return err(w.error().message);
  }
  auto ranged = read_ckpt_response(*conn, limits, "to the ranges");
  if (!ranged) return err(ranged.error().message);
  if (ranged->status() != wire::CkptResponse::OK) return err("ranges refused: " + ranged->message());
  const uint64_t expected = ckpt::ranged_stream_bytes(sizes, *runs);
  if (ranged->stream_bytes() != expected) {
    return err(peer.addr + " announced " + std::to_string(ranged->stream_bytes()) + " bytes for ranges of " +
                   std::to_string(expected),
               true);
  }
  deadlines.add_bytes(expected);
  constexpr uint64_t kSliceChunks = kVerifySliceChunks;
  std::vector<std::byte> scratch;
  std::vector<uint32_t> crcs;
  std::vector<uint32_t> received;  // the crcs of the chunks as they arrived
  for (size_t i = 0; i < runs->size(); ++i) {
    const auto& run = (*runs)[i];
    const auto& b = info->buffers[run.buffer];
    if (i == 0 || (*runs)[i - 1].buffer != run.buffer) {
      std::vector<std::byte> list(4 * ckpt::chunk_count(b.size));
      if (auto r = read_all(*conn, list, deadlines); !r) return err(r.error().message);
      crcs = ckpt::decode_chunk_crcs(list);
      if (!ckpt::chunk_crcs_match(crcs, b.checksum)) {
        return err("the chunk checksums of buffer '" + b.name + "' of " + what + " from " + peer.addr +
                       " do not match its sealed checksum",
                   true);
      }
    }
    for (uint64_t c = run.first_chunk; c < run.first_chunk + run.chunks; c += kSliceChunks) {
      const ckpt::ChunkRun slice{run.buffer, c, std::min(kSliceChunks, run.first_chunk + run.chunks - c)};
      const auto span = ckpt::run_bytes(slice, b.size);
      scratch.resize(span.bytes);
      if (auto r = read_all(*conn, scratch, deadlines); !r) return err(r.error().message);
      received.resize(slice.chunks);
      ckpt::chunk_crc_values(scratch, received.data());
      for (uint64_t k = 0; k < slice.chunks; ++k) {
        if (received[k] != crcs[c + k]) {
          return err("chunk " + std::to_string(c + k) + " of buffer '" + b.name + "' of " + what + " from " +
                         peer.addr + " does not match its checksum",
                     true);
        }
      }
      sink(run.buffer, span.offset, scratch);
    }
  }
  return std::move(*info);
}

Status serve_fetch_ranges(net::BlockingConn& conn, std::span<const std::byte> segment, const ckpt::VersionInfo* info,
                          const TransferLimits& limits) {
  if (info == nullptr || segment.empty()) return send_ckpt_response(conn, wire::CkptResponse::NOT_HELD, "", limits);
  Deadlines deadlines(limits, Clock::now());
  deadlines.add_bytes(info->data_offset);
  if (auto r = send_ckpt_response(conn, wire::CkptResponse::OK, "", limits, info->data_offset); !r) return r;
  if (auto r = write_all(conn, segment.first(info->data_offset), deadlines); !r) return r;
  auto frame = conn.read_frame(kMaxRangesFrameBytes, deadlines.step());
  if (!frame) return fail("no ranges: " + frame.error().message);
  wire::CkptRanges ask;
  if (frame->type != wire::type_byte(wire::FrameType::request) ||
      !ask.ParseFromArray(frame->payload.data(), static_cast<int>(frame->payload.size()))) {
    (void)send_ckpt_response(conn, wire::CkptResponse::REFUSED, "a malformed ranges request", limits);
    return fail("a malformed ranges request");
  }
  std::vector<ckpt::ChunkRun> runs;
  for (const auto& r : ask.runs()) runs.push_back({r.buffer(), r.first_chunk(), r.chunks()});
  const auto sizes = sizes_of(*info);
  if (auto c = ckpt::check_chunk_runs(sizes, runs); !c) {
    (void)send_ckpt_response(conn, wire::CkptResponse::REFUSED, c.error().message, limits);
    return fail("ranges refused: " + c.error().message);
  }
  const uint64_t total = ckpt::ranged_stream_bytes(sizes, runs);
  deadlines.add_bytes(total);
  if (auto r = send_ckpt_response(conn, wire::CkptResponse::OK, "", limits, total); !r) return r;
  const ckpt::ChunkLists lists(*info);
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& b = info->buffers[runs[i].buffer];
    const auto bytes = segment.subspan(b.offset, b.size);
    if (i == 0 || runs[i - 1].buffer != runs[i].buffer) {
      // The list the segment keeps when it folds to the sealed checksum, else computed (chunk_lists.hpp).
      const auto crcs = ckpt::kept_or_computed_crcs(lists, segment, b, runs[i].buffer);
      if (auto r = write_all(conn, ckpt::encode_chunk_crcs(crcs), deadlines); !r) return r;
    }
    const auto span = ckpt::run_bytes(runs[i], b.size);
    if (auto r = write_all(conn, bytes.subspan(span.offset, span.bytes), deadlines); !r) return r;
  }
  return Ok{};
}

}  // namespace shoal::ckpt_service

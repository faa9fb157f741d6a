// Both ends of the link probe (link_probe.hpp): pings, bulk frames, the end and its count.
#include "daemon/check/link_probe.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "wire/frame.hpp"

namespace shoal::daemon::check {
namespace {

using Clock = std::chrono::steady_clock;

// The first byte of every frame the sender writes.
enum class Part : uint8_t { ping = 1, bulk = 2, end = 3 };

// How long one ping or the end's answer may take beyond the probe's own time: a slow link still drains the
// socket buffers (a few MiB) within it.
constexpr std::chrono::milliseconds kAnswerAllowance{3000};

// The receiver's bound beyond the bytes' time, for the pings and the drain together.
constexpr std::chrono::milliseconds kServeAllowance{10000};

constexpr uint8_t kRequest = wire::type_byte(wire::FrameType::request);
constexpr uint8_t kResponse = wire::type_byte(wire::FrameType::response);

void put_u64(std::byte* at, uint64_t v) {
  for (int i = 7; i >= 0; --i) {
    at[i] = std::byte(v & 0xff);
    v >>= 8;
  }
}

uint64_t get_u64(const std::byte* at) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | uint64_t(at[i]);
  return v;
}

uint64_t micros(Clock::duration d) {
  return static_cast<uint64_t>(std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::microseconds>(d).count()));
}

}  // namespace

LinkProbeLimits capped(LinkProbeLimits wanted) {
  wanted.max_bytes = std::clamp<uint64_t>(wanted.max_bytes, 1, kMaxLinkBytes);
  wanted.max_time = std::clamp(wanted.max_time, std::chrono::milliseconds(1), kMaxLinkTime);
  wanted.pings = std::clamp<uint32_t>(wanted.pings, 1, kMaxPings);
  return wanted;
}

Result<LinkMeasure> send_link_probe(net::BlockingConn& conn, const LinkProbeLimits& wanted,
                                    const std::atomic<bool>* cancel) {
  const LinkProbeLimits limits = capped(wanted);
  conn.set_cancel(cancel);
  LinkMeasure out;
  std::vector<uint64_t> rtts;
  for (uint32_t i = 0; i < limits.pings; ++i) {
    std::array<std::byte, 9> ping{};
    ping[0] = std::byte(Part::ping);
    put_u64(ping.data() + 1, i);
    const auto sent = Clock::now();
    const auto deadline = sent + kAnswerAllowance;
    if (auto w = conn.write_frame(kRequest, ping, deadline); !w) return fail("ping: " + w.error().message);
    auto echo = conn.read_frame(ping.size(), deadline);
    if (!echo) return fail("ping: " + echo.error().message);
    if (echo->type != kResponse || echo->payload.size() != ping.size() ||
        std::memcmp(echo->payload.data(), ping.data(), ping.size()) != 0) {
      return fail("ping: the answer is not the echo of the ping");
    }
    rtts.push_back(micros(Clock::now() - sent));
  }
  std::sort(rtts.begin(), rtts.end());
  out.rtt_min_us = rtts.front();
  out.rtt_us = rtts[rtts.size() / 2];

  std::vector<std::byte> bulk(1 + kBulkFrameBytes, std::byte{0x5a});
  bulk[0] = std::byte(Part::bulk);
  const auto start = Clock::now();
  const auto stop_at = start + limits.max_time;
  uint64_t sent = 0;
  while (sent < limits.max_bytes && Clock::now() < stop_at) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kBulkFrameBytes, limits.max_bytes - sent));
    // A write blocked by a slow link may run past stop_at by what the socket buffer holds; the answer's
    // allowance covers that.
    if (auto w = conn.write_frame(kRequest, std::span(bulk).first(1 + n), stop_at + kAnswerAllowance); !w) {
      return fail("sending: " + w.error().message);
    }
    sent += n;
  }
  const std::array<std::byte, 1> end{std::byte(Part::end)};
  const auto answer_by = Clock::now() + kAnswerAllowance;
  if (auto w = conn.write_frame(kRequest, end, answer_by); !w) return fail("end: " + w.error().message);
  auto count = conn.read_frame(8, answer_by);
  if (!count) return fail("the receiver's count: " + count.error().message);
  if (count->type != kResponse || count->payload.size() != 8) return fail("the receiver's count is malformed");
  out.elapsed_us = std::max<uint64_t>(1, micros(Clock::now() - start));
  out.bytes = get_u64(count->payload.data());
  if (out.bytes != sent) {
    return fail("the receiver counted " + std::to_string(out.bytes) + " bytes of the " + std::to_string(sent) +
                " sent");
  }
  return out;
}

Status serve_link_probe(net::BlockingConn& conn, const LinkProbeLimits& limits) {
  // Everything must be over by then: the bytes' time, and a bound on the pings and the drain at the end.
  const auto deadline = Clock::now() + limits.max_time + kServeAllowance;
  uint32_t pings = 0;
  uint64_t bytes = 0;
  while (true) {
    auto frame = conn.read_frame(1 + kBulkFrameBytes, deadline);
    if (!frame) return fail(frame.error().message);
    if (frame->type != kRequest || frame->payload.empty()) return fail("a frame out of turn");
    const auto part = static_cast<Part>(frame->payload[0]);
    if (part == Part::ping) {
      if (++pings > limits.pings || bytes > 0) return fail("more pings than agreed, or a ping after the bytes");
      if (frame->payload.size() != 9) return fail("a malformed ping");
      if (auto w = conn.write_frame(kResponse, frame->payload, deadline); !w) return fail(w.error().message);
    } else if (part == Part::bulk) {
      bytes += frame->payload.size() - 1;
      if (bytes > limits.max_bytes) return fail("more bytes than agreed");
    } else if (part == Part::end) {
      std::array<std::byte, 8> count{};
      put_u64(count.data(), bytes);
      return conn.write_frame(kResponse, count, deadline);
    } else {
      return fail("an unknown part " + std::to_string(std::to_integer<int>(frame->payload[0])));
    }
  }
}

}  // namespace shoal::daemon::check

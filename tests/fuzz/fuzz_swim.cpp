// Fuzz target: the gossip core's network inputs. A real gossip::Swim ("node-a", started with one seed)
// receives the input as a sequence of chunks, [op][length u16 LE][bytes], so that state builds up
// across them (members learned from one packet are probed and suspected later):
//   op & 3 == 0: on_packet(seed, bytes)       1: on_stream_request(seed, bytes)
//            2: on_stream_response(oldest pending request, bytes)
//            3: empty: on_tick; else the oldest pending request fails (on_stream_response(nullopt)), or is
//               refused (on_stream_refused) when the first byte is odd; with bit 1 of it set, a hint
//               (hint_failed) about the member the second byte picks from the core's list follows
//   time advances by (op >> 2) * 5 ms before each chunk; after the last, the core gets the ticks it
//   asks for during 3 s more.
// Asserts after every call: the core asks for a tick ahead of now (its contract), our own record stays alive in our own table with our generation, the
// table grows by no more members than the input could name, local health stays in range, and
// every packet, stream request and stream reply the core emits decodes again (wire::decode_packet
// with our cluster id, then the gossip body) within its byte budget and comes from us.
#include <google/protobuf/stubs/logging.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/log.hpp"
#include "gossip.pb.h"
#include "gossip/codec.hpp"
#include "gossip/swim.hpp"
#include "wire/packet.hpp"

namespace {

using namespace shoal;
using gossip::Time;

// The same constants as make_corpus.cpp's transcripts.
constexpr const char* kCluster = "fuzz-cluster";
constexpr const char* kSeedAddr = "10.0.0.2:7946";
constexpr uint64_t kRngSeed = 1;
constexpr size_t kMaxStreamBytes = 1 << 20;

gossip::Config config() {
  gossip::Config cfg;
  cfg.cluster_id = kCluster;
  cfg.max_stream_bytes = kMaxStreamBytes;
  cfg.broadcast_queue_max = 64;  // small, so that overflow is reached
  return cfg;
}
const gossip::Identity kSelf{"node-a", 7, "10.0.0.1:7946"};

// The sender is us and the packet decodes with our cluster id within `max_bytes`.
wire::Envelope check_packet(std::span<const std::byte> bytes, size_t max_bytes) {
  if (bytes.size() > max_bytes) __builtin_trap();
  auto env = wire::decode_packet(bytes, wire::PacketLimits{max_bytes, kCluster});
  if (!env || env->sender().name() != kSelf.name || env->sender().generation() != kSelf.generation) {
    __builtin_trap();
  }
  return *env;
}

struct Harness {
  gossip::Swim swim{config(), kSelf, gossip::MemberMeta{"host-a", 8, {}}, kRngSeed};
  gossip::Effects out;
  std::deque<uint64_t> pending;  // tokens of our stream requests not answered yet, oldest first
  size_t bytes_fed = 0;
  Time wake{0};

  // After a call at `now`.
  void check(Time now) {
    const auto& cfg = swim.config();
    // A started core always has a deadline ahead (its next probe at least), and says so every call.
    if (!out.wake_at || *out.wake_at <= now) __builtin_trap();
    wake = *out.wake_at;
    for (const auto& p : out.packets) {
      if (p.to.empty()) __builtin_trap();
      auto env = check_packet(p.bytes, cfg.max_packet_bytes);
      if (!gossip::decode_gossip(env)) __builtin_trap();
    }
    for (const auto& s : out.streams) {
      if (s.to.empty() || s.token == 0) __builtin_trap();
      auto env = check_packet(s.bytes, cfg.max_stream_bytes);
      gossip::pb::StreamRequest req;
      if (!req.ParseFromString(env.gossip()) || req.kind_case() == gossip::pb::StreamRequest::KIND_NOT_SET) {
        __builtin_trap();
      }
      pending.push_back(s.token);
    }
    for (const auto& e : out.events) {
      if (e.member.id.name.empty()) __builtin_trap();
    }
    out.clear();

    const std::optional<gossip::Member> me = swim.find(kSelf.name);
    if (!me || me->state != gossip::State::alive || me->id.generation != kSelf.generation) {
      __builtin_trap();
    }
    // A new member takes an update of at least a name, a generation and their tags.
    const size_t members = swim.members().size();
    if (members > 1 + bytes_fed / 4 || swim.live_count() > members) __builtin_trap();
    if (swim.local_health() < 0 || swim.local_health() > static_cast<int>(cfg.awareness_max)) __builtin_trap();
    if (swim.queued_updates() > cfg.broadcast_queue_max) __builtin_trap();  // the queue stays bounded
  }

  uint64_t take_pending() {
    if (pending.empty()) return 12345;  // a token the core never gave: ignored
    const uint64_t t = pending.front();
    pending.pop_front();
    return t;
  }
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  shoal::log::LevelSpec quiet;  // a refused packet is logged once per core: per input, here
  quiet.fallback = spdlog::level::off;
  shoal::log::setup(quiet);
  google::protobuf::SetLogHandler(nullptr);  // nor about invalid UTF-8 in a string field
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Harness h;
  Time now{0};
  h.swim.start({kSeedAddr}, now, h.out);
  h.check(now);

  size_t at = 0;
  while (at + 3 <= size) {
    const uint8_t op = data[at];
    const size_t want = data[at + 1] | (size_t{data[at + 2]} << 8);
    at += 3;
    const size_t len = std::min(want, size - at);
    const auto bytes = std::as_bytes(std::span(data + at, len));
    at += len;
    h.bytes_fed += len;
    now += std::chrono::milliseconds(5 * (op >> 2));
    switch (op & 3) {
      case 0:
        h.swim.on_packet(kSeedAddr, bytes, now, h.out);
        break;
      case 1: {
        auto reply = h.swim.on_stream_request(kSeedAddr, bytes, now, h.out);
        if (!reply.empty()) {
          auto env = check_packet(reply, h.swim.config().max_stream_bytes);
          gossip::pb::StreamReply r;
          if (!r.ParseFromString(env.gossip())) __builtin_trap();
        }
        break;
      }
      case 2:
        h.swim.on_stream_response(h.take_pending(), bytes, now, h.out);
        break;
      case 3:
        if (len == 0) {
          h.swim.on_tick(now, h.out);
        } else {
          const auto first = std::to_integer<uint8_t>(bytes[0]);
          if (first & 1) {
            h.swim.on_stream_refused(h.take_pending(), now, h.out);
          } else {
            h.swim.on_stream_response(h.take_pending(), std::nullopt, now, h.out);
          }
          if ((first & 2) && len >= 2) {
            const auto members = h.swim.members();
            const auto& m = members[std::to_integer<uint8_t>(bytes[1]) % members.size()];
            h.check(now);
            h.swim.hint_failed(m.id.name, m.id.generation, now, h.out);
          }
        }
        break;
    }
    h.check(now);
  }
  // Let probes time out and suspicions expire: ticks when asked, for 3 s.
  const Time end = now + std::chrono::seconds(3);
  for (int i = 0; i < 10000 && h.wake <= end; ++i) {
    now = h.wake;
    h.swim.on_tick(now, h.out);
    h.check(now);
  }
  return 0;
}

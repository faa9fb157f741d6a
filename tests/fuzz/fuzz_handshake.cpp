// Fuzz target: the connection handshake (wire/stream_handshake.hpp) with a fixed key ring and server
// addresses. The first byte says what the rest is:
//   0  a first message (the sealed hello) at a server: accepted or refused by cause, never a crash; an
//      accepted one carries the hello payload, and a proof the client never computed is refused;
//   1  a reply at a client that sent a fixed hello: always refused (the input cannot know the key);
//   2  a proof at a server that accepted a fixed hello: always refused;
//   3+ a whole exchange with the rest as the hello payload: it completes with matching keys in both
//      directions, which seal and open a frame; then each message with one input-chosen bit flipped,
//      the first message replayed, and sent to another address, are refused.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

#include "wire/cluster_key.hpp"
#include "wire/frame_cipher.hpp"
#include "wire/replay_guard.hpp"
#include "wire/sealed_packet.hpp"
#include "wire/stream_handshake.hpp"

namespace {

using namespace shoal::wire;

// The same text as fuzz_sealed.cpp and make_corpus.cpp, whose hello seeds are sealed for kTo at kNowMs.
constexpr const char* kKeyText =
    "# fuzz keys\n"
    "0f1e2d3c4b5a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff0\n"
    "QEFCQ0RFRkdISUpLTE1OT1BRUlNUVVZXWFlaW1xdXl8=\n";
constexpr int64_t kNowMs = 1'700'000'000'000;
constexpr std::string_view kTo = "10.0.0.2:7946";
constexpr std::array<std::string_view, 2> kOwn = {"192.168.0.2:7946", "10.0.0.2:7946"};
constexpr std::array<std::string_view, 1> kElsewhere = {"10.0.0.3:7946"};
constexpr uint8_t kBoth =
    static_cast<uint8_t>(StreamCipher::xchacha20poly1305) | static_cast<uint8_t>(StreamCipher::aes256gcm);

const KeyRing& ring() {
  static const KeyRing keys = [] {
    auto parsed = parse_key_text(kKeyText, "fuzz");
    if (!parsed) __builtin_trap();
    return *parsed;
  }();
  return keys;
}

PacketSealer& sealer() {
  static PacketSealer s(ring());
  return s;
}

// The offer of both ends: the input's choice, limited to what this CPU has.
uint8_t offer_from(uint8_t bits) {
  const uint8_t wanted = (bits & kBoth) != 0 ? (bits & kBoth) : kBoth;
  return static_cast<uint8_t>(wanted & local_cipher_offer()) | static_cast<uint8_t>(StreamCipher::xchacha20poly1305);
}

std::vector<std::byte> flipped(const std::vector<std::byte>& m, size_t bit) {
  std::vector<std::byte> out = m;
  const size_t at = bit % (out.size() * 8);
  out[at / 8] ^= std::byte(1u << (at % 8));
  return out;
}

void exchange(std::span<const std::byte> hello, uint8_t offer_bits, size_t bit) {
  const uint8_t offer = offer_from(offer_bits);
  const ClientHandshake client = ClientHandshake::start(sealer(), hello, kTo, kNowMs, offer);
  const auto& m1 = client.hello_message();
  ReplayGuard guard;
  auto server = ServerHandshake::accept(ring(), m1, kOwn, kNowMs, guard, offer);
  if (!server) __builtin_trap();
  if (server->hello().size() != hello.size() ||
      (!hello.empty() && std::memcmp(server->hello().data(), hello.data(), hello.size()) != 0)) {
    __builtin_trap();
  }
  auto finished = client.finish(server->reply_message());
  if (!finished) __builtin_trap();
  auto keys = server->finish(finished->proof);
  if (!keys) __builtin_trap();
  const StreamKeys& c = finished->keys;
  if (c.cipher != keys->cipher || c.send != keys->receive || c.receive != keys->send || c.send == c.receive) {
    __builtin_trap();
  }
  // The keys work: one frame each way.
  SealedFrames client_frames(c), server_frames(*keys);
  for (auto [from, to] : {std::pair{&client_frames, &server_frames}, std::pair{&server_frames, &client_frames}}) {
    std::vector<std::byte> wire;
    from->send.append(wire, type_byte(FrameType::request), hello);
    Frame f{static_cast<uint8_t>(wire[4]), std::vector<std::byte>(wire.begin() + kFrameHeaderBytes, wire.end())};
    if (!to->receive.open(f) || f.payload.size() != hello.size()) __builtin_trap();
  }

  // The same first message again at the same server: replayed. At another host: wrong_destination.
  auto again = ServerHandshake::accept(ring(), m1, kOwn, kNowMs, guard, offer);
  if (again || again.error().cause != RejectCause::replayed) __builtin_trap();
  ReplayGuard other_guard;
  auto elsewhere = ServerHandshake::accept(ring(), m1, kElsewhere, kNowMs, other_guard, offer);
  if (elsewhere || elsewhere.error().cause != RejectCause::wrong_destination) __builtin_trap();

  // One bit flipped in each message in turn.
  ReplayGuard fresh;
  if (ServerHandshake::accept(ring(), flipped(m1, bit), kOwn, kNowMs, fresh, offer)) __builtin_trap();
  if (client.finish(flipped(server->reply_message(), bit))) __builtin_trap();
  if (server->finish(flipped(finished->proof, bit))) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto rest = std::as_bytes(std::span(data + 1, size - 1));
  const uint8_t offer = offer_from(data[0] >> 2);
  switch (data[0] & 3) {
    case 0: {
      ReplayGuard guard;
      auto server = ServerHandshake::accept(ring(), rest, kOwn, kNowMs, guard, offer);
      if (!server) return 0;
      if (server->reply_message().size() != kHandshakeReplyBytes) __builtin_trap();
      // The input sealed a hello, but it never saw this reply: no proof it could have sent opens it.
      if (server->finish(std::vector<std::byte>(kHandshakeProofBytes))) __builtin_trap();
      if (server->finish(rest.first(std::min(rest.size(), kHandshakeProofBytes)))) __builtin_trap();
      return 0;
    }
    case 1: {
      static const ClientHandshake client = ClientHandshake::start(sealer(), {}, kTo, kNowMs, kBoth);
      if (client.finish(rest)) __builtin_trap();
      return 0;
    }
    case 2: {
      static const ServerHandshake server = [] {
        const auto client = ClientHandshake::start(sealer(), {}, kTo, kNowMs, kBoth);
        ReplayGuard guard;
        auto s = ServerHandshake::accept(ring(), client.hello_message(), kOwn, kNowMs, guard, kBoth);
        if (!s) __builtin_trap();
        return *s;
      }();
      if (server.finish(rest)) __builtin_trap();
      return 0;
    }
    default: {
      // A hello payload is at most about a kilobyte; the bit to flip comes from the input's length.
      if (rest.size() > 2048) return 0;
      size_t bit = 0;
      for (const std::byte b : rest) bit = bit * 31 + static_cast<size_t>(b);
      exchange(rest, data[0] >> 2, bit);
      return 0;
    }
  }
}

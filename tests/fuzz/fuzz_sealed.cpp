// Fuzz target: opening sealed packets (open_sealed, looks_sealed) with a fixed key ring and receiver. Random bytes
// rarely get past the tag, so each input is also sealed and opened again, with fixed and with
// input-chosen clocks, with one bit flipped and for another host, which must always be refused.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

#include "wire/cluster_key.hpp"
#include "wire/replay_guard.hpp"
#include "wire/sealed_packet.hpp"

namespace {

// Two keys (hex, then base64), as in a rotation; the first one seals. make_corpus.cpp seals its seeds
// with the same text, at kNowMs, so that they open here.
constexpr const char* kKeyText =
    "# fuzz keys\n"
    "0f1e2d3c4b5a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff0\n"
    "QEFCQ0RFRkdISUpLTE1OT1BRUlNUVVZXWFlaW1xdXl8=\n";
constexpr int64_t kNowMs = 1'700'000'000'000;
// The receiver's addresses; the seeds are sealed for kTo.
constexpr std::string_view kTo = "10.0.0.2:7946";
constexpr std::array<std::string_view, 2> kOwn = {"192.168.0.2:7946", "10.0.0.2:7946"};

const shoal::wire::KeyRing& ring() {
  static const shoal::wire::KeyRing keys = [] {
    auto parsed = shoal::wire::parse_key_text(kKeyText, "fuzz");
    if (!parsed) __builtin_trap();
    return *parsed;
  }();
  return keys;
}

bool same(std::span<const std::byte> a, std::span<const std::byte> b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

int64_t read_i64(const uint8_t* p) {
  int64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal::wire;
  const auto bytes = std::as_bytes(std::span(data, size));

  // The input as a received datagram. A fresh guard per input keeps runs reproducible.
  (void)looks_sealed(bytes);
  {
    ReplayGuard guard;
    auto opened = open_sealed(ring(), bytes, kOwn, kNowMs, guard);
    if (opened) {
      if (!looks_sealed(bytes) || opened->size() + kSealOverheadBytes != size) __builtin_trap();
      auto replay = open_sealed(ring(), bytes, kOwn, kNowMs, guard);
      if (replay || replay.error().cause != OpenCause::replayed) __builtin_trap();
    }
  }

  // The input as a plaintext: sealing and opening gives it back, once.
  static PacketSealer sealer(ring());
  const std::vector<std::byte> sealed = sealer.seal(bytes, kTo, kNowMs);
  if (!looks_sealed(sealed) || sealed.size() != size + kSealOverheadBytes) __builtin_trap();
  {
    ReplayGuard guard;
    auto back = open_sealed(ring(), sealed, kOwn, kNowMs, guard);
    if (!back || !same(*back, bytes)) __builtin_trap();
    auto replay = open_sealed(ring(), sealed, kOwn, kNowMs, guard);
    if (replay || replay.error().cause != OpenCause::replayed) __builtin_trap();
  }

  // Any one bit flipped (header, ciphertext or tag) is refused.
  if (size > 0) {
    std::vector<std::byte> tampered = sealed;
    const size_t bit = (size_t{data[0]} << 8 | data[size - 1]) % (tampered.size() * 8);
    tampered[bit / 8] ^= std::byte(1u << (bit % 8));
    ReplayGuard guard;
    if (open_sealed(ring(), tampered, kOwn, kNowMs, guard)) __builtin_trap();
  }

  // Sealed for another host: refused as wrong_destination, whatever the plaintext.
  {
    ReplayGuard guard;
    auto elsewhere = open_sealed(ring(), sealer.seal(bytes, "10.0.0.3:7946", kNowMs), kOwn, kNowMs, guard);
    if (elsewhere || elsewhere.error().cause != OpenCause::wrong_destination) __builtin_trap();
  }

  // Sender and receiver clocks from the input: the packet opens exactly when they are within the
  // guard's window, and is refused as stale otherwise.
  if (size >= 16) {
    const int64_t sent_ms = read_i64(data);
    const int64_t now_ms = read_i64(data + 8);
    const auto rest = bytes.subspan(16);
    const std::vector<std::byte> timed = sealer.seal(rest, kTo, sent_ms);
    ReplayGuard guard;
    auto back = open_sealed(ring(), timed, kOwn, now_ms, guard);
    if (guard.outside_time_window(sent_ms, now_ms)) {
      if (back || back.error().cause != OpenCause::stale) __builtin_trap();
    } else if (!back || !same(*back, rest)) {
      __builtin_trap();
    }
  }
  return 0;
}

// The seeds of the connection fuzz targets; see corpus_stream_seeds.hpp.
#include "corpus_stream_seeds.hpp"

#include <vector>

#include "wire/sealed_packet.hpp"
#include "wire/stream_handshake.hpp"

namespace shoal::fuzz {
namespace {

using Bytes = std::vector<std::byte>;

// fuzz_handshake: the first byte picks the mode (0 a first message, 1 a reply, 2 a proof, 3 a whole
// exchange whose hello payload is the rest; bits 2-3 the ciphers offered).
void handshakes(const wire::KeyRing& keys, std::span<const std::byte> hello, std::string_view to, int64_t now_ms,
                const SeedSink& save) {
  wire::PacketSealer sealer(keys);
  const auto with_mode = [](uint8_t mode, std::span<const std::byte> rest) {
    Bytes out{std::byte{mode}};
    out.insert(out.end(), rest.begin(), rest.end());
    return out;
  };
  const auto first = wire::ClientHandshake::start(sealer, hello, to, now_ms, 3);
  save("fuzz_handshake", "first-message", with_mode(0, first.hello_message()));
  const auto elsewhere = wire::ClientHandshake::start(sealer, hello, "10.0.0.3:7946", now_ms, 3);
  save("fuzz_handshake", "first-message-elsewhere", with_mode(0, elsewhere.hello_message()));
  // A first message sealed right whose plaintext lacks the handshake's fields (what an older build sent).
  save("fuzz_handshake", "hello-without-handshake", with_mode(0, sealer.seal(hello, to, now_ms)));
  save("fuzz_handshake", "reply", with_mode(1, Bytes(wire::kHandshakeReplyBytes, std::byte{1})));
  save("fuzz_handshake", "proof", with_mode(2, Bytes(wire::kHandshakeProofBytes, std::byte{7})));
  save("fuzz_handshake", "exchange-aes", with_mode(3 | (2 << 2), hello));
  save("fuzz_handshake", "exchange-xchacha", with_mode(3 | (1 << 2), hello));
  save("fuzz_handshake", "exchange-empty", with_mode(3, {}));
}

// fuzz_sealed_stream: [mode: bit 0 a stream sealed right, bit 1 AES][change][where][record size / 8]
// then the data (its first 8 bytes also choose the reads' room sizes).
void sealed_streams(const SeedSink& save) {
  const auto seed = [](uint8_t mode, uint8_t change, uint8_t where, uint8_t record, size_t bytes) {
    Bytes out{std::byte{mode}, std::byte{change}, std::byte{where}, std::byte{record}};
    for (size_t i = 0; i < bytes; ++i) out.push_back(std::byte((i * 37 + 5) & 0xFF));
    return out;
  };
  save("fuzz_sealed_stream", "kept-aes", seed(3, 0, 0, 40, 1000));
  save("fuzz_sealed_stream", "kept-xchacha", seed(1, 0, 0, 255, 3000));
  save("fuzz_sealed_stream", "small-records", seed(3, 0, 0, 0, 200));
  save("fuzz_sealed_stream", "flipped", seed(3, 1, 17, 20, 600));
  save("fuzz_sealed_stream", "cut-short", seed(1, 2, 90, 20, 600));
  save("fuzz_sealed_stream", "swapped", seed(3, 3, 1, 10, 600));
  save("fuzz_sealed_stream", "raw-bytes", seed(0, 0, 0, 0, 300));
  Bytes lying = seed(0, 0, 0, 0, 0);
  const uint8_t header[] = {0x00, 0x40, 0x00, 0x12, 5};  // a data record announcing 4 MiB + 1 (above the limit)
  for (const uint8_t b : header) lying.push_back(std::byte{b});
  save("fuzz_sealed_stream", "lying-length", lying);
}

}  // namespace

void stream_seeds(const wire::KeyRing& keys, std::span<const std::byte> hello, std::string_view to, int64_t now_ms,
                  const SeedSink& save) {
  handshakes(keys, hello, to, now_ms, save);
  sealed_streams(save);
}

}  // namespace shoal::fuzz

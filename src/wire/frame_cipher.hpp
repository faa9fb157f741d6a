// Sealed frames: every frame of a keyed connection after its handshake (stream_handshake.hpp), both ways,
// under that direction's key. A sealed frame keeps the frame layout of frame.hpp,
//   [u32 length, big-endian][u8 type][ciphertext][16 tag]      length = 1 + ciphertext + 16
// with the 5-byte header as associated data and the direction's frame counter (0, 1, 2, ...) as the
// nonce, which is never sent: a frame dropped, repeated, reordered, moved to the other direction or to
// another connection, or cut short, fails its tag (or the read). The ciphertext is as long as the
// plaintext, so bulk bytes can be opened in place where they landed (BlockingConn::read_data).
//
// AES-256-GCM (libsodium's, with its key schedule precomputed once per connection) or XChaCha20-Poly1305,
// as the handshake chose. Each key seals one direction of one connection, counters start at 0, and a
// sealer refuses to pass 2^64 - 1 frames, so no nonce repeats under a key.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/result.hpp"
#include "wire/frame.hpp"
#include "wire/reject.hpp"
#include "wire/stream_handshake.hpp"

namespace shoal::wire {

inline constexpr size_t kFrameTagBytes = 16;

// One direction's key and counter, sealing or opening.
class FrameCipher {
 public:
  FrameCipher(StreamCipher cipher, std::span<const unsigned char, kStreamKeyBytes> key);
  ~FrameCipher();
  FrameCipher(const FrameCipher&) = delete;
  FrameCipher& operator=(const FrameCipher&) = delete;

  // Sealing. The whole frame into `out` (kFrameHeaderBytes + payload + kFrameTagBytes bytes): header,
  // ciphertext, tag. `out` and `payload` may not overlap.
  void seal(uint8_t type, std::span<const std::byte> payload, std::span<std::byte> out);
  // The same, appended to a buffer.
  void append(std::vector<std::byte>& out, uint8_t type, std::span<const std::byte> payload);

  // Opening a frame whose header was read: `body` holds its ciphertext (opened in place into its
  // plaintext) and `tag` the 16 bytes after it. `header` is the 5 bytes as received. bad_auth when the
  // tag fails; the body then holds garbage and the connection must be closed.
  Result<Ok, DecodeError> open(std::span<const std::byte, kFrameHeaderBytes> header, std::span<std::byte> body,
                               std::span<const std::byte, kFrameTagBytes> tag);
  // Opens a frame read whole by FrameReader or async_read_frame (its payload: ciphertext then tag) in
  // place, leaving the plaintext as its payload.
  Result<Ok, DecodeError> open(Frame& frame);

  StreamCipher cipher() const { return cipher_; }
  uint64_t frames() const { return counter_; }

 private:
  struct State;
  StreamCipher cipher_;
  std::unique_ptr<State> state_;
  uint64_t counter_ = 0;
};

// The two directions of one connection.
struct SealedFrames {
  explicit SealedFrames(const StreamKeys& keys) : send(keys.cipher, keys.send), receive(keys.cipher, keys.receive) {}
  FrameCipher send;
  FrameCipher receive;
};

}  // namespace shoal::wire

// Sealing and opening the frames of a keyed connection: AES-256-GCM or XChaCha20-Poly1305 (libsodium),
// the direction's frame counter as the nonce, the frame header as associated data.
#include "wire/frame_cipher.hpp"

#include <sodium.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

namespace shoal::wire {
namespace {

static_assert(crypto_aead_aes256gcm_ABYTES == kFrameTagBytes);
static_assert(crypto_aead_xchacha20poly1305_ietf_ABYTES == kFrameTagBytes);
static_assert(crypto_aead_aes256gcm_KEYBYTES == kStreamKeyBytes);
static_assert(crypto_aead_xchacha20poly1305_ietf_KEYBYTES == kStreamKeyBytes);

// The counter, little endian, then zeros: 12 bytes for AES-GCM, 24 for XChaCha20.
struct Nonce {
  unsigned char bytes[crypto_aead_xchacha20poly1305_ietf_NPUBBYTES] = {};
  explicit Nonce(uint64_t counter) {
    for (size_t i = 0; i < 8; ++i) bytes[i] = static_cast<unsigned char>(counter >> (8 * i));
  }
};

void write_header(unsigned char* p, uint8_t type, size_t payload) {
  const auto len = static_cast<uint32_t>(1 + payload + kFrameTagBytes);
  p[0] = static_cast<unsigned char>(len >> 24);
  p[1] = static_cast<unsigned char>(len >> 16);
  p[2] = static_cast<unsigned char>(len >> 8);
  p[3] = static_cast<unsigned char>(len);
  p[4] = type;
}

}  // namespace

struct FrameCipher::State {
  crypto_aead_aes256gcm_state aes;  // expanded once: the schedule costs more than a small frame
  unsigned char key[kStreamKeyBytes];
};

FrameCipher::FrameCipher(StreamCipher cipher, std::span<const unsigned char, kStreamKeyBytes> key)
    : cipher_(cipher), state_(std::make_unique<State>()) {
  if (!init_sodium()) std::abort();  // the handshake that made the key initialised it already
  std::memcpy(state_->key, key.data(), kStreamKeyBytes);
  if (cipher_ == StreamCipher::aes256gcm) {
    if (crypto_aead_aes256gcm_is_available() == 0) {
      std::fprintf(stderr, "shoal: AES-256-GCM chosen on a CPU without it\n");
      std::abort();  // the handshake offers it only where it is available
    }
    crypto_aead_aes256gcm_beforenm(&state_->aes, state_->key);
  }
}

FrameCipher::~FrameCipher() { sodium_memzero(state_.get(), sizeof(State)); }

void FrameCipher::seal(uint8_t type, std::span<const std::byte> payload, std::span<std::byte> out) {
  if (out.size() != kFrameHeaderBytes + payload.size() + kFrameTagBytes ||
      payload.size() + 1 + kFrameTagBytes > std::numeric_limits<uint32_t>::max() ||
      counter_ == std::numeric_limits<uint64_t>::max()) {
    std::fprintf(stderr, "shoal: a sealed frame of %zu bytes into %zu (frame %llu)\n", payload.size(), out.size(),
                 static_cast<unsigned long long>(counter_));
    std::abort();  // sizes are the caller's; 2^64 frames are never sent
  }
  auto* p = reinterpret_cast<unsigned char*>(out.data());
  write_header(p, type, payload.size());
  const Nonce nonce(counter_++);
  const auto* m = reinterpret_cast<const unsigned char*>(payload.data());
  unsigned char* c = p + kFrameHeaderBytes;
  unsigned char* tag = c + payload.size();
  if (cipher_ == StreamCipher::aes256gcm) {
    crypto_aead_aes256gcm_encrypt_detached_afternm(c, tag, nullptr, m, payload.size(), p, kFrameHeaderBytes, nullptr,
                                                   nonce.bytes, &state_->aes);
  } else {
    crypto_aead_xchacha20poly1305_ietf_encrypt_detached(c, tag, nullptr, m, payload.size(), p, kFrameHeaderBytes,
                                                        nullptr, nonce.bytes, state_->key);
  }
}

void FrameCipher::append(std::vector<std::byte>& out, uint8_t type, std::span<const std::byte> payload) {
  const size_t at = out.size();
  out.resize(at + kFrameHeaderBytes + payload.size() + kFrameTagBytes);
  seal(type, payload, std::span<std::byte>(out).subspan(at));
}

Result<Ok, DecodeError> FrameCipher::open(std::span<const std::byte, kFrameHeaderBytes> header,
                                          std::span<std::byte> body, std::span<const std::byte, kFrameTagBytes> tag) {
  const auto* h = reinterpret_cast<const unsigned char*>(header.data());
  const uint32_t len = (uint32_t(h[0]) << 24) | (uint32_t(h[1]) << 16) | (uint32_t(h[2]) << 8) | uint32_t(h[3]);
  if (len != 1 + body.size() + kFrameTagBytes) {
    return Unexpected<DecodeError>{{RejectCause::malformed, "a sealed frame whose length says " + std::to_string(len) +
                                                                " bytes, not " +
                                                                std::to_string(1 + body.size() + kFrameTagBytes)}};
  }
  if (counter_ == std::numeric_limits<uint64_t>::max()) {
    return Unexpected<DecodeError>{{RejectCause::oversized, "2^64 frames on one connection"}};
  }
  const Nonce nonce(counter_);
  auto* m = reinterpret_cast<unsigned char*>(body.data());
  const auto* t = reinterpret_cast<const unsigned char*>(tag.data());
  const int rc = cipher_ == StreamCipher::aes256gcm
                     ? crypto_aead_aes256gcm_decrypt_detached_afternm(m, nullptr, m, body.size(), t, h,
                                                                      kFrameHeaderBytes, nonce.bytes, &state_->aes)
                     : crypto_aead_xchacha20poly1305_ietf_decrypt_detached(m, nullptr, m, body.size(), t, h,
                                                                           kFrameHeaderBytes, nonce.bytes, state_->key);
  if (rc != 0) {
    return Unexpected<DecodeError>{
        {RejectCause::bad_auth, "sealed frame " + std::to_string(counter_) +
                                    " does not verify: tampered, reordered, replayed or from another connection"}};
  }
  ++counter_;
  return Ok{};
}

Result<Ok, DecodeError> FrameCipher::open(Frame& frame) {
  if (frame.payload.size() < kFrameTagBytes) {
    return Unexpected<DecodeError>{
        {RejectCause::truncated,
         "a sealed frame of " + std::to_string(frame.payload.size()) + " bytes, shorter than its tag"}};
  }
  const size_t body = frame.payload.size() - kFrameTagBytes;
  std::byte header[kFrameHeaderBytes];
  const auto len = static_cast<uint32_t>(frame.payload.size() + 1);
  header[0] = std::byte(len >> 24);
  header[1] = std::byte(len >> 16);
  header[2] = std::byte(len >> 8);
  header[3] = std::byte(len);
  header[4] = std::byte(frame.type);
  std::byte tag[kFrameTagBytes];
  std::memcpy(tag, frame.payload.data() + body, kFrameTagBytes);
  auto opened = open(std::span<const std::byte, kFrameHeaderBytes>(header),
                     std::span<std::byte>(frame.payload).first(body), std::span<const std::byte, kFrameTagBytes>(tag));
  if (!opened) return opened;
  frame.payload.resize(body);
  return Ok{};
}

}  // namespace shoal::wire

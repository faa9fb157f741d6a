// TraceHash: a running FNV-1a (64-bit) digest of everything a run delivered and announced, so that two
// runs can be compared by one number: same seed, same hash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace shoal::sim {

class TraceHash {
 public:
  // Bytes are folded eight at a time (FNV-1a over 64-bit words, then the tail byte by byte): a byte-wise
  // FNV over every packet of a 10,000-member run would cost more than the protocol under test.
  void mix_bytes(std::span<const std::byte> bytes);
  void mix(uint64_t v) { fold(v); }
  void mix(std::string_view s);

  uint64_t value() const { return h_; }
  std::string hex() const;

 private:
  void fold(uint64_t word) {
    h_ ^= word;
    h_ *= kPrime;
  }
  static constexpr uint64_t kOffset = 0xcbf29ce484222325ULL;
  static constexpr uint64_t kPrime = 0x100000001b3ULL;
  uint64_t h_ = kOffset;
};

}  // namespace shoal::sim

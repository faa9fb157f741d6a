// The shared cluster key: the key file's text and permissions, the key id carried on the wire, and the
// ring of keys a host accepts while a key is being rotated.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.hpp"

namespace shoal::wire {

inline constexpr size_t kClusterKeyBytes = 32;
// Two keys are enough for a rotation; a few more leave room for a rotation that overlaps another.
inline constexpr size_t kMaxRingKeys = 4;
// A key file is a few lines; anything larger is a wrong path, not a key file.
inline constexpr size_t kMaxKeyFileBytes = 64 * 1024;

// Initialises libsodium once; thread-safe, cheap after the first call. Every function of the cluster
// key and the sealed packet calls it; an agent calls it first to report a failure as an error. Those
// that cannot return an error (PacketSealer's constructor, generate_key_text) abort when it fails:
// without a system random source, nonces and keys would not be safe.
Status init_sodium();

// One key. `id` is derived from the bytes (cluster_key_id) and travels in every sealed packet, so a
// receiver finds the key without trying each one. The bytes are zeroed when a ClusterKey is destroyed.
struct ClusterKey {
  std::array<unsigned char, kClusterKeyBytes> bytes{};
  uint32_t id = 0;
  ~ClusterKey();
};

// The first 4 bytes (little endian) of BLAKE2b-256("shoal-cluster-key-id" || key). Part of the wire
// format: changing it makes every host refuse every other host's packets as unknown_key.
uint32_t cluster_key_id(std::span<const unsigned char, kClusterKeyBytes> key);
ClusterKey make_cluster_key(std::span<const unsigned char, kClusterKeyBytes> key);

// The keys a host accepts, 1..kMaxRingKeys of them, distinct, none all-zero, no two with the same id;
// the first one seals. A rotation takes three steps, each finished on every host before the next:
//   1. add the new key as the second line (accepted, not yet used to send);
//   2. move it to the first line (now it seals; the old one is still accepted);
//   3. remove the old key.
// Copyable; every copy zeroes its keys when destroyed.
class KeyRing {
 public:
  static Result<KeyRing> from_keys(std::vector<ClusterKey> keys);

  const ClusterKey& sending() const { return keys_.front(); }
  // nullptr when no key of the ring has this id.
  const ClusterKey* find(uint32_t id) const;
  size_t size() const { return keys_.size(); }
  std::span<const ClusterKey> keys() const { return keys_; }

 private:
  explicit KeyRing(std::vector<ClusterKey> keys) : keys_(std::move(keys)) {}
  std::vector<ClusterKey> keys_;
};

// The key file's text: one key per line, as 64 hex digits or standard base64 with padding (what
// `openssl rand -base64 32` prints); surrounding whitespace is trimmed, blank lines and lines starting
// with '#' are ignored. Errors name `origin` and the line, and never echo the line (it is a secret).
Result<KeyRing> parse_key_text(std::string_view text, std::string_view origin);

// Reads and parses a key file. Refuses a symbolic link (never followed), a file that is not a regular
// one (a FIFO is never blocked on), one owned by another user than this process's or root, one readable
// or writable by group or others (mode & 077), and one larger than kMaxKeyFileBytes; each refusal says
// the command that fixes it.
Result<KeyRing> load_key_file(const std::string& path);

// A fresh random key as a comment line and a line of base64, ready to be written to a key file.
std::string generate_key_text();

}  // namespace shoal::wire

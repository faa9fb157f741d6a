// The seal on state one rank hands to the others over the trainers' own connections (Gloo's or NCCL's,
// which the cluster key does not protect): the Python package's hand-over of a live training state after a
// view change. A receiver checks it before it parses a byte, so bytes from anyone without the cluster key,
// or replayed from another view, attempt or sender, are refused.
//
//   seal   = u32 key id | tag
//   subkey = crypto_kdf_derive_from_key(32, id 2, "shoalstt", K)     (K: the ring's key of that id)
//   tag    = BLAKE2b-256(key subkey, "shoal state v1" | u64 epoch | u32 attempt | u32 sender | u32 world |
//                        u32 key id | data)                          (integers little-endian)
//
// In an open cluster (no key) the seal is empty and nothing is checked. Every holder of K is trusted alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "wire/cluster_key.hpp"

namespace shoal::session {

struct StatePlace {
  uint64_t epoch = 0;
  uint32_t attempt = 0;
  uint32_t sender = 0;  // the rank that sends
  uint32_t world = 0;
};

// `data`'s seal under the ring's sending key; empty when `keys` is nullptr (an open cluster).
std::vector<std::byte> seal_state(std::span<const std::byte> data, const wire::KeyRing* keys, const StatePlace& place);
// Whether `seal` is `data`'s seal for `place` under a key of the ring; with no ring, whether `seal` is empty.
bool state_seal_valid(std::span<const std::byte> data, std::span<const std::byte> seal, const wire::KeyRing* keys,
                      const StatePlace& place);

}  // namespace shoal::session

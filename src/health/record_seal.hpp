// The timing record as it travels: the record (step_record.hpp) followed by the id of the cluster key that
// sealed it and a tag over the record and its place (epoch, attempt, exchange step, rank, world size). The
// exchange rides the job's own collectives, whose connections (Gloo's TCP pairs) the cluster key does not
// protect: the tag is what lets eviction act on the figures. A record whose tag does not verify under a key
// of this host's ring is dropped whole and counted, never trusted; in an open cluster (no key) the tag is
// zero and nothing is verified, so eviction refuses to run there.
//
//   subkey = crypto_kdf_derive_from_key(32, id 1, "shoalhlt", K)        (K: the ring's key of that id)
//   tag    = BLAKE2b-128(key subkey, "shoal health record v1" | u64 epoch | u32 attempt | u64 step |
//                        u32 rank | u32 world | u32 key id | record)    (integers little-endian)
//
// The place under the tag stops a record from being moved to another rank's slot, replayed at a later
// exchange or into another view; every holder of K is trusted alike (one member can forge another's figures,
// as it can claim another's name).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "health/step_record.hpp"
#include "wire/cluster_key.hpp"

namespace shoal::health {

inline constexpr size_t kRecordTagBytes = 16;
inline constexpr size_t kSealedRecordBytes = kRecordBytes + 4 + kRecordTagBytes;

using SealedRecordBytes = std::array<std::byte, kSealedRecordBytes>;

// Where a record belongs: the same on every rank for one exchange, but for `rank`.
struct RecordPlace {
  uint64_t epoch = 0;
  uint32_t attempt = 0;  // rebuilds of the epoch's communicator
  uint64_t step = 0;     // the last step the exchange covers
  uint32_t rank = 0;
  uint32_t world = 0;
};

// `record` sealed with the ring's sending key; `keys` nullptr: an open cluster (key id 0, zero tag).
SealedRecordBytes seal_record(const RecordBytes& record, const wire::KeyRing* keys, const RecordPlace& place);

enum class RecordTrust : uint8_t {
  verified,  // the tag verified under a key of the ring
  open,      // no ring (an open cluster): nothing verified
  forged,    // keyed, but the tag does not verify (or names no key of the ring, or the size is wrong)
};

struct OpenedRecord {
  RecordTrust trust = RecordTrust::forged;
  std::span<const std::byte> record;  // the record's bytes (empty when forged)
};

// Checks `sealed` (kSealedRecordBytes, else forged) for `place` under `keys` (nullptr: open, not checked).
OpenedRecord open_record(std::span<const std::byte> sealed, const wire::KeyRing* keys, const RecordPlace& place);

}  // namespace shoal::health

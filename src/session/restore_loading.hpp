// Loading the version a restore agreed on, from this host's shared memory or from a peer's agent: either
// into a RestoredCheckpoint's own bytes (Session::restore) or straight into memory the caller names
// (Session::restore_into), each buffer copied and verified against its checksum in one pass.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "ckpt_service/transfer.hpp"
#include "shoal/checkpoint.hpp"

namespace shoal::session {

// The caller's placer threw: the restore ends on every rank (the message says why).
class PlacerFailed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct LoadRequest {
  std::string job;
  std::string store;  // this host's segment names
  uint32_t rank = 0;  // the saved rank whose version is wanted
  uint64_t step = 0;
  const RestorePlacer* place = nullptr;  // null: load into RestoredCheckpoint::data
  // From a peer: the most bytes the version may have, as the view's reports promised it
  // (ckpt::promised_bytes). A peer announcing more is refused before any memory is allocated for it.
  uint64_t max_bytes = UINT64_MAX;
};

// From this host's memory; nullopt when no intact copy is held here. Throws PlacerFailed.
std::optional<RestoredCheckpoint> load_local(const LoadRequest& request);
// From a segment this process has mapped already (the rank's own store: see RankStore::sealed_segment);
// nullopt when it does not hold an intact copy. Throws PlacerFailed.
std::optional<RestoredCheckpoint> load_mapped(const LoadRequest& request, std::span<const std::byte> segment);

// From the agent at `peer`; nullopt (with the reason logged) when it fails. Throws PlacerFailed.
std::optional<RestoredCheckpoint> load_from_peer(const LoadRequest& request, const ckpt_service::TransferPeer& peer,
                                                 const std::string& holder);

}  // namespace shoal::session

// GlooStoreAdapter: Gloo's rendezvous Store (set/get/wait) over shoal's epoch-scoped RendezvousStore,
// with a configurable timeout instead of Gloo's fixed 30 s. Exceptions of the underlying store
// (shoal::ViewChanged, shoal::Timeout) pass through Gloo unchanged.
#pragma once

#include <gloo/rendezvous/store.h>

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "comm_wrap/rendezvous_store.hpp"

namespace shoal::comm {

class GlooStoreAdapter final : public gloo::rendezvous::Store {
 public:
  // Keys are stored as prefix + Gloo's key. `timeout` bounds every get and wait. With `world_size` > 1,
  // the first get of a rank's address key ("0".."world_size-1", Gloo's connectFullMesh) fetches every
  // other rank's in one exchange: the full mesh reads them one after another, each a round trip to the
  // store host otherwise, on the recovery's critical path.
  GlooStoreAdapter(RendezvousStore& store, std::string prefix, std::chrono::milliseconds timeout, int world_size = 0,
                   int rank = -1);

  void set(const std::string& key, const std::vector<char>& data) override;
  // Gloo expects get to block until the key exists.
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  // Gloo passes its context's timeout here; the adapter's own replaces it, so that the pair connect
  // timeout (derived from the context's) and the rendezvous timeout can differ.
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

  // The value this adapter read for Gloo's `key`, if it did: the communicator learns its peers'
  // published addresses this way.
  std::optional<std::vector<char>> fetched(const std::string& key) const;

 private:
  std::vector<std::string> prefixed(const std::vector<std::string>& keys) const;

  RendezvousStore& store_;
  const std::string prefix_;
  const std::chrono::milliseconds timeout_;
  const int world_size_;
  const int rank_;
  bool prefetched_ = false;
  mutable std::mutex mu_;
  std::map<std::string, std::vector<char>, std::less<>> fetched_;
};

}  // namespace shoal::comm

// EpochStore: a key-value store that belongs to one committed view, served by the agents themselves (the
// agent of that view's rank 0), for frameworks that bootstrap from a store: torch.distributed's
// init_process_group(store=...), or a trainer's own agreement on a value. No store host outlives its
// view: every view has a fresh, empty namespace, so a key of an old view is never read by a new one,
// and every call on a view that was superseded (or that lost a member) throws shoal::ViewChanged at once
// instead of waiting on a host that may be dead.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "shoal/api.hpp"
#include "shoal/errors.hpp"

namespace shoal {

class SHOAL_API EpochStore {
 public:
  virtual ~EpochStore() = default;

  // The epoch (and, for a communicator rebuilt within its epoch, the attempt) whose namespace this is.
  virtual uint64_t epoch() const = 0;
  virtual uint32_t attempt() const = 0;

  virtual void set(const std::string& key, std::span<const std::byte> value) = 0;
  // Waits up to `timeout` for the key; throws shoal::Timeout naming it.
  virtual std::vector<std::byte> get(const std::string& key, std::chrono::milliseconds timeout) = 0;
  // Adds `delta` to a counter (an absent key counts as 0; a counter is stored as decimal text, so get()
  // reads "3") and returns its new value. Throws shoal::Error when the key holds something else.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  // The counter once it differs from `seen`, or as it is after `timeout` (a long poll; what a barrier
  // that polls add(key, 0) wants, without the polling).
  virtual int64_t wait_for_change(const std::string& key, int64_t seen, std::chrono::milliseconds timeout) = 0;
  // Whether every key is present now (true for none).
  virtual bool check(const std::vector<std::string>& keys) = 0;
  // Removes the key; whether it was there.
  virtual bool remove(const std::string& key) = 0;
  // How many keys this store holds.
  virtual int64_t num_keys() = 0;
  // Waits up to `timeout` for every key; throws shoal::Timeout naming the missing ones.
  virtual void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;
};

}  // namespace shoal

// LocalRendezvousStore: the rendezvous store of one epoch for ranks that share one process (embedded
// trainers with several ranks, tests). One object is one epoch's table; every rank of the epoch uses
// the same object. supersede() ends the epoch: waits in progress and every later call throw
// shoal::ViewChanged at once.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "comm_wrap/rendezvous_store.hpp"

namespace shoal::comm {

class LocalRendezvousStore final : public RendezvousStore {
 public:
  explicit LocalRendezvousStore(uint64_t epoch) : epoch_(epoch) {}

  uint64_t epoch() const override { return epoch_; }
  // A later set of the same key replaces the value.
  void set(const std::string& key, const Bytes& value) override;
  std::vector<Bytes> multi_get(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;

  // Ends this epoch (idempotent; the first reason is kept).
  void supersede(const std::string& why);
  bool superseded() const;

 private:
  // Blocks until every key is present; the lock is held on return.
  void wait_locked(std::unique_lock<std::mutex>& lock, const std::vector<std::string>& keys,
                   std::chrono::milliseconds timeout);
  void throw_if_superseded_locked() const;

  const uint64_t epoch_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, Bytes, std::less<>> table_;
  std::optional<std::string> superseded_why_;
};

}  // namespace shoal::comm

// SessionEpochStore: shoal::EpochStore over the rendezvous service of one view's epoch, in a namespace of
// its own (per attempt, apart from the keys communicators and restores use).
#pragma once

#include <memory>
#include <string>

#include "session/rendezvous_client.hpp"
#include "shoal/store.hpp"

namespace shoal::session {

class SessionEpochStore final : public EpochStore {
 public:
  // `scope`: the prefix of the attempt's keys (SessionCore::scope); the store's own go under scope + "user/".
  SessionEpochStore(NetworkRendezvousStore::Options options, uint32_t attempt, const std::string& scope);

  uint64_t epoch() const override { return store_.epoch(); }
  uint32_t attempt() const override { return attempt_; }
  void set(const std::string& key, std::span<const std::byte> value) override;
  std::vector<std::byte> get(const std::string& key, std::chrono::milliseconds timeout) override;
  int64_t add(const std::string& key, int64_t delta) override;
  int64_t wait_for_change(const std::string& key, int64_t seen, std::chrono::milliseconds timeout) override;
  bool check(const std::vector<std::string>& keys) override;
  bool remove(const std::string& key) override;
  int64_t num_keys() override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;

 private:
  std::string scoped(const std::string& key) const { return prefix_ + key; }
  std::vector<std::string> scoped(const std::vector<std::string>& keys) const;

  NetworkRendezvousStore store_;
  uint32_t attempt_;
  std::string prefix_;
};

}  // namespace shoal::session

// ScopedRendezvousStore: a view of another rendezvous store whose keys all carry one prefix, so that
// a communicator rebuilt for the same epoch (a later attempt, see session/session_core.hpp) bootstraps
// from keys of its own and never reads the addresses its failed predecessor published.
#pragma once

#include <string>
#include <utility>

#include "comm_wrap/rendezvous_store.hpp"

namespace shoal::comm {

class ScopedRendezvousStore : public RendezvousStore {
 public:
  ScopedRendezvousStore(RendezvousStore& inner, std::string prefix) : inner_(inner), prefix_(std::move(prefix)) {}

  uint64_t epoch() const override { return inner_.epoch(); }
  void set(const std::string& key, const Bytes& value) override { inner_.set(prefix_ + key, value); }
  std::vector<Bytes> multi_get(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    return inner_.multi_get(scoped(keys), timeout);
  }
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    inner_.wait(scoped(keys), timeout);
  }

 private:
  std::vector<std::string> scoped(const std::vector<std::string>& keys) const {
    std::vector<std::string> out;
    out.reserve(keys.size());
    for (const auto& k : keys) out.push_back(prefix_ + k);
    return out;
  }

  RendezvousStore& inner_;
  std::string prefix_;
};

// The key prefix of a communicator's attempt within its epoch: none for the first, so that the first
// build's keys are the same as before attempts existed.
inline std::string attempt_prefix(uint32_t attempt) {
  return attempt == 0 ? std::string() : "attempt/" + std::to_string(attempt) + "/";
}

}  // namespace shoal::comm

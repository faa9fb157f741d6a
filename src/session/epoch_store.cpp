// The trainer's key-value store of one view: every key under "user/" of the view's attempt.
#include "session/epoch_store.hpp"

#include <cstring>

namespace shoal::session {

SessionEpochStore::SessionEpochStore(NetworkRendezvousStore::Options options, uint32_t attempt,
                                     const std::string& scope)
    : store_(std::move(options)), attempt_(attempt), prefix_(scope + "user/") {}

std::vector<std::string> SessionEpochStore::scoped(const std::vector<std::string>& keys) const {
  std::vector<std::string> out;
  out.reserve(keys.size());
  for (const auto& k : keys) out.push_back(scoped(k));
  return out;
}

void SessionEpochStore::set(const std::string& key, std::span<const std::byte> value) {
  store_.set(scoped(key), comm::Bytes(reinterpret_cast<const char*>(value.data()),
                                      reinterpret_cast<const char*>(value.data()) + value.size()));
}

std::vector<std::byte> SessionEpochStore::get(const std::string& key, std::chrono::milliseconds timeout) {
  const auto v = store_.get(scoped(key), timeout);
  std::vector<std::byte> out(v.size());
  std::memcpy(out.data(), v.data(), v.size());
  return out;
}

int64_t SessionEpochStore::add(const std::string& key, int64_t delta) { return store_.add(scoped(key), delta); }

int64_t SessionEpochStore::wait_for_change(const std::string& key, int64_t seen, std::chrono::milliseconds timeout) {
  return store_.add_wait_change(scoped(key), seen, timeout);
}

bool SessionEpochStore::check(const std::vector<std::string>& keys) {
  return keys.empty() || store_.check(scoped(keys));
}

bool SessionEpochStore::remove(const std::string& key) { return store_.remove(scoped(key)); }

int64_t SessionEpochStore::num_keys() { return store_.num_keys(prefix_); }

void SessionEpochStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  if (!keys.empty()) store_.wait(scoped(keys), timeout);
}

}  // namespace shoal::session

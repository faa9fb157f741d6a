// Gloo's Store on top of the epoch-scoped rendezvous store.
#include "comm_wrap/gloo/store_adapter.hpp"

namespace shoal::comm {

GlooStoreAdapter::GlooStoreAdapter(RendezvousStore& store, std::string prefix, std::chrono::milliseconds timeout)
    : store_(store), prefix_(std::move(prefix)), timeout_(timeout) {}

void GlooStoreAdapter::set(const std::string& key, const std::vector<char>& data) { store_.set(prefix_ + key, data); }

std::vector<char> GlooStoreAdapter::get(const std::string& key) {
  auto value = store_.get(prefix_ + key, timeout_);
  std::lock_guard lock(mu_);
  fetched_[key] = value;
  return value;
}

void GlooStoreAdapter::wait(const std::vector<std::string>& keys) { store_.wait(prefixed(keys), timeout_); }

void GlooStoreAdapter::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& /*gloo's*/) {
  store_.wait(prefixed(keys), timeout_);
}

std::optional<std::vector<char>> GlooStoreAdapter::fetched(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = fetched_.find(key);
  if (it == fetched_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> GlooStoreAdapter::prefixed(const std::vector<std::string>& keys) const {
  std::vector<std::string> out;
  out.reserve(keys.size());
  for (const auto& key : keys) out.push_back(prefix_ + key);
  return out;
}

}  // namespace shoal::comm

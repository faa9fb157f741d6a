// Gloo's Store on top of the epoch-scoped rendezvous store.
#include "comm_wrap/gloo/store_adapter.hpp"

namespace shoal::comm {

GlooStoreAdapter::GlooStoreAdapter(RendezvousStore& store, std::string prefix, std::chrono::milliseconds timeout,
                                   int world_size, int rank)
    : store_(store), prefix_(std::move(prefix)), timeout_(timeout), world_size_(world_size), rank_(rank) {}

void GlooStoreAdapter::set(const std::string& key, const std::vector<char>& data) { store_.set(prefix_ + key, data); }

std::vector<char> GlooStoreAdapter::get(const std::string& key) {
  {
    std::lock_guard lock(mu_);
    if (auto it = fetched_.find(key); it != fetched_.end()) return it->second;
  }
  const bool rank_key = world_size_ > 1 && !key.empty() && key.size() <= 9 &&
                        key.find_first_not_of("0123456789") == std::string::npos && std::stoi(key) < world_size_;
  bool prefetch = false;
  {
    std::lock_guard lock(mu_);
    prefetch = rank_key && !prefetched_;
    prefetched_ = prefetched_ || rank_key;
  }
  if (prefetch) {
    std::vector<std::string> keys, names;
    for (int r = 0; r < world_size_; ++r) {
      if (r == rank_) continue;
      names.push_back(std::to_string(r));
      keys.push_back(prefix_ + names.back());
    }
    auto values = store_.multi_get(keys, timeout_);
    std::lock_guard lock(mu_);
    for (size_t i = 0; i < names.size() && i < values.size(); ++i) fetched_[names[i]] = std::move(values[i]);
    if (auto it = fetched_.find(key); it != fetched_.end()) return it->second;
  }
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

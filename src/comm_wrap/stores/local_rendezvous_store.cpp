// The in-process rendezvous table of one epoch.
#include "comm_wrap/stores/local_rendezvous_store.hpp"

#include "shoal/errors.hpp"

namespace shoal::comm {

namespace {

// Names at most this many missing keys in a timeout message: a world of thousands of ranks must not
// produce a megabyte of text, and the first few say which ranks to look at.
constexpr size_t kMaxNamedKeys = 16;

std::string describe_missing(const std::vector<std::string>& missing) {
  std::string text;
  for (size_t i = 0; i < missing.size() && i < kMaxNamedKeys; ++i) {
    if (i > 0) text += ", ";
    text += "'" + missing[i] + "'";
  }
  if (missing.size() > kMaxNamedKeys) text += " and " + std::to_string(missing.size() - kMaxNamedKeys) + " more";
  return text;
}

}  // namespace

void LocalRendezvousStore::set(const std::string& key, const Bytes& value) {
  {
    std::lock_guard lock(mu_);
    throw_if_superseded_locked();
    table_[key] = value;
  }
  changed_.notify_all();
}

std::vector<Bytes> LocalRendezvousStore::multi_get(const std::vector<std::string>& keys,
                                                   std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  wait_locked(lock, keys, timeout);
  std::vector<Bytes> values;
  values.reserve(keys.size());
  for (const auto& key : keys) values.push_back(table_.find(key)->second);
  return values;
}

void LocalRendezvousStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  wait_locked(lock, keys, timeout);
}

void LocalRendezvousStore::supersede(const std::string& why) {
  {
    std::lock_guard lock(mu_);
    if (!superseded_why_) superseded_why_ = why;
  }
  changed_.notify_all();
}

bool LocalRendezvousStore::superseded() const {
  std::lock_guard lock(mu_);
  return superseded_why_.has_value();
}

void LocalRendezvousStore::wait_locked(std::unique_lock<std::mutex>& lock, const std::vector<std::string>& keys,
                                       std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto all_present = [&] {
    for (const auto& key : keys) {
      if (!table_.contains(key)) return false;
    }
    return true;
  };
  for (;;) {
    throw_if_superseded_locked();
    if (all_present()) return;
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout) {
      throw_if_superseded_locked();
      if (all_present()) return;
      std::vector<std::string> missing;
      for (const auto& key : keys) {
        if (!table_.contains(key)) missing.push_back(key);
      }
      throw Timeout("rendezvous of epoch " + std::to_string(epoch_) + ": after " + std::to_string(timeout.count()) +
                    " ms still missing " + std::to_string(missing.size()) + " of " + std::to_string(keys.size()) +
                    " keys: " + describe_missing(missing));
    }
  }
}

void LocalRendezvousStore::throw_if_superseded_locked() const {
  if (superseded_why_) throw ViewChanged(epoch_, "rendezvous store superseded: " + *superseded_why_);
}

}  // namespace shoal::comm

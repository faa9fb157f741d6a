// The epoch-scoped key-value store communicators bootstrap from (Gloo's addresses, NCCL's unique id).
// One store per epoch; no outside service: the agents serve it (see daemon/rendezvous_service.hpp), and
// LocalRendezvousStore serves ranks that share one process. A call on a superseded epoch throws
// shoal::ViewChanged at once; a wait that does not complete throws shoal::Timeout naming the missing keys.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shoal::comm {

using Bytes = std::vector<char>;

inline Bytes to_bytes(std::string_view s) { return Bytes(s.begin(), s.end()); }

class RendezvousStore {
 public:
  virtual ~RendezvousStore() = default;

  virtual uint64_t epoch() const = 0;
  virtual void set(const std::string& key, const Bytes& value) = 0;
  // Waits for every key, then returns their values in order.
  virtual std::vector<Bytes> multi_get(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;
  virtual void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;
  Bytes get(const std::string& key, std::chrono::milliseconds timeout) { return multi_get({key}, timeout).at(0); }
};

}  // namespace shoal::comm

// NetworkRendezvousStore: the rendezvous store of one epoch as a rank sees it, served by the agent
// of that epoch's rank 0 over the RENDEZVOUS channel. Blocking calls, meant for the trainer's threads
// (Gloo's connect, NCCL's unique id exchange); each call is one TCP exchange. A call gives up at once,
// with shoal::ViewChanged, when `superseded()` turns true (the caller's agent learned of a newer view
// or of a failed member), so a rank never waits on a store host that died.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "comm_wrap/rendezvous_store.hpp"
#include "net/stream_hello.hpp"
#include "rendezvous.pb.h"

namespace shoal::session {

class NetworkRendezvousStore : public comm::RendezvousStore {
 public:
  struct Options {
    std::string store_addr;  // "ip:port" of the agent serving the epoch
    uint64_t epoch = 0;
    net::OutgoingHello hello;          // the RENDEZVOUS hello naming the caller
    std::function<bool()> superseded;  // polled while waiting; may be empty
    std::chrono::milliseconds set_timeout{10'000};
    std::chrono::milliseconds retry_pause{50};  // between attempts while the store host refuses connections
  };

  explicit NetworkRendezvousStore(Options options);

  uint64_t epoch() const override { return opt_.epoch; }
  void set(const std::string& key, const comm::Bytes& value) override;
  std::vector<comm::Bytes> multi_get(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;

  // What a framework's store needs besides (see RendezvousRequest in proto/rendezvous.proto).
  int64_t add(const std::string& key, int64_t delta);
  // The counter's value once it differs from `seen`, or as it is after `timeout`.
  int64_t add_wait_change(const std::string& key, int64_t seen, std::chrono::milliseconds timeout);
  bool check(const std::vector<std::string>& keys);
  bool remove(const std::string& key);
  int64_t num_keys(const std::string& prefix);

 private:
  // One request, retried on connection failures until `deadline`; throws on VIEW_CHANGED, TIMEOUT, REFUSED.
  wire::RendezvousResponse call(const wire::RendezvousRequest& request, std::chrono::steady_clock::time_point deadline);

  Options opt_;
  std::mutex mu_;  // one exchange at a time: Gloo may call from more than one thread
};

}  // namespace shoal::session

// Seed names resolved after the agent's start, never blocking it: every A/AAAA record of a name,
// asynchronously, retried with backoff while it resolves to nothing (a pod starts before its DNS record
// exists; a Slurm node name a resolver is slow to know), and looked up again every `refresh` while the
// agent looks for members (no committed view, or one below --min-hosts) and every `settled_refresh` after
// (a seed that moved to a new address, found before the agent needs it). The agent's own address is
// skipped without dropping the name. An unresolvable name is a logged retry, never fatal.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "net/host_port.hpp"

namespace shoal::daemon {

class SeedResolver {
 public:
  // Addresses ("ip:port") not reported before, for gossip's seed list.
  using Found = std::function<void(std::vector<std::string> addrs)>;
  // Whether the agent still looks for members (no committed view, or a view below --min-hosts): names are
  // refreshed every `refresh` then, every `settled_refresh` otherwise.
  using Joining = std::function<bool()>;

  struct Timing {
    std::chrono::milliseconds first_retry{1000};
    std::chrono::milliseconds max_retry{30000};
    std::chrono::milliseconds refresh{5000};  // a pod's seed that moved, or records that were wrong, found in seconds
    std::chrono::milliseconds settled_refresh{600000};
  };
  // Names refreshed at most (a Slurm job hands every agent all N-1 node names): the first ones in the list.
  static constexpr size_t kMaxRefreshed = 16;
  // Records taken from one name at most (a name that resolves to thousands is bounded).
  static constexpr size_t kMaxRecordsPerName = 64;

  SeedResolver(boost::asio::io_context& io, std::vector<net::HostPort> names, std::string own_addr, Found found,
               Joining joining, Timing timing);
  ~SeedResolver();
  SeedResolver(const SeedResolver&) = delete;
  SeedResolver& operator=(const SeedResolver&) = delete;

  void start();
  void stop();
  // Lookups made so far (each retry and refresh counts), for tests and the log.
  size_t lookups() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

// The seeds an agent starts with: numeric ones at once; names looked up with `lookup` (blocking), at most
// `lookups` of them (a founder handed its own name finds itself), all names kept for the SeedResolver.
// The agent's own address and repeats are dropped. maybe_peer: a name did not resolve here and may be
// another host, so the agent joins rather than founding a cluster alone.
struct StartSeeds {
  std::vector<std::string> addrs;
  std::vector<net::HostPort> names;
  bool maybe_peer = false;
};
StartSeeds seeds_at_start(const std::vector<net::HostPort>& seeds, const std::string& own_addr, size_t lookups,
                          const std::function<std::optional<boost::asio::ip::address>(const net::HostPort&)>& lookup);

}  // namespace shoal::daemon

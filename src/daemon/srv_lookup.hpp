// DNS SRV lookups for seeds given as dns+srv:NAME (a Kubernetes headless Service's _port._proto records):
// glibc's resolver (libresolv) with its own state, one try per server of 2 s, then every target's A/AAAA
// records. Blocking, so SeedResolver runs it off the agent's event loop. Everything taken from an answer is
// bounded: at most `max` records and `max` addresses; a malformed answer is an error, never a crash.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/result.hpp"

namespace shoal::daemon {

struct SrvRecord {
  uint16_t priority = 0;
  uint16_t weight = 0;
  uint16_t port = 0;
  std::string target;
  bool operator==(const SrvRecord&) const = default;
};

// The SRV records in the answer section of DNS message `msg`, in its order, at most `max` of them; records of
// other types and targets of "." (no service) are skipped. A message that does not parse, or an SRV record
// shorter than its fixed part, is an error.
Result<std::vector<SrvRecord>> parse_srv_answer(std::span<const unsigned char> msg, size_t max);

// Resolver results as "ip:port" texts with `port`, each once, appended to `out` while it holds fewer than `max`:
// what a seed name's lookup reports, A/AAAA and SRV alike.
void append_ip_ports(const boost::asio::ip::tcp::resolver::results_type& results, uint16_t port, size_t max,
                     std::vector<std::string>& out);

// NAME's SRV records, lowest priority first, each target resolved: "ip:port" texts, at most `max`. An error
// says why (no such name, no records, the resolver's configuration).
Result<std::vector<std::string>> lookup_srv(const std::string& name, size_t max);

}  // namespace shoal::daemon

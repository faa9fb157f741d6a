// Connects a Gloo full mesh: outgoing connects first, then the incoming ones (see mesh_connect.hpp).
#include "comm_wrap/gloo/mesh_connect.hpp"

#include <gloo/transport/context.h>
#include <gloo/transport/tcp/address.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <optional>
#include <string>

#include "comm_wrap/gloo/gloo_assumptions.hpp"

namespace shoal::comm {

std::optional<bool> gloo_initiates(const std::vector<char>& self, const std::vector<char>& peer) {
  const gloo::transport::tcp::Address a(self);
  const gloo::transport::tcp::Address b(peer);
  const auto& x = a.getSockaddr();
  const auto& y = b.getSockaddr();
  if (x.ss_family != y.ss_family) return std::nullopt;
  int cmp = 0;
  // Gloo compares the addresses' bytes, then subtracts the ports as stored (network byte order).
  if (x.ss_family == AF_INET) {
    const auto& p = reinterpret_cast<const sockaddr_in&>(x);
    const auto& q = reinterpret_cast<const sockaddr_in&>(y);
    cmp = std::memcmp(&p.sin_addr, &q.sin_addr, sizeof(in_addr));
    if (cmp == 0) cmp = static_cast<int>(p.sin_port) - static_cast<int>(q.sin_port);
  } else if (x.ss_family == AF_INET6) {
    const auto& p = reinterpret_cast<const sockaddr_in6&>(x);
    const auto& q = reinterpret_cast<const sockaddr_in6&>(y);
    cmp = std::memcmp(&p.sin6_addr, &q.sin6_addr, sizeof(in6_addr));
    if (cmp == 0) cmp = static_cast<int>(p.sin6_port) - static_cast<int>(q.sin6_port);
  } else {
    return std::nullopt;
  }
  if (cmp == 0) return std::nullopt;
  return cmp > 0;
}

void MeshContext::connect_mesh(gloo::rendezvous::Store& store, const std::shared_ptr<gloo::transport::Device>& device) {
  auto transport = device->createContext(rank, size);
  transport->setTimeout(getTimeout());
  // Every pair listens from its creation on, so a peer may connect to it before this rank reaches it.
  std::vector<char> published;
  std::vector<std::vector<char>> own(static_cast<size_t>(size));
  for (int i = 0; i < size; ++i) {
    if (i == rank) continue;
    auto& pair = transport->createPair(i);
    pair->setLocalRank(0);  // Gloo's TCP transport never reads it; the field must hold a valid value
    own[static_cast<size_t>(i)] = pair->address().bytes();
    published.insert(published.end(), own[static_cast<size_t>(i)].begin(), own[static_cast<size_t>(i)].end());
  }
  // Gloo's own connect (a trainer of an older shoal in the same job, during a rolling upgrade) reads
  // every lower rank's host name before it connects: publish it too, although nothing here reads it.
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  store.set("rank_" + std::to_string(rank), std::vector<char>(host, host + std::strlen(host)));
  store.set(std::to_string(rank), published);

  // The peers' addresses for their pair with this rank (the first get fetches every peer's at once
  // through GlooStoreAdapter; with any other store it is one get per peer).
  std::vector<std::vector<char>> peer(static_cast<size_t>(size));
  for (int i = 0; i < size; ++i) {
    if (i == rank) continue;
    auto all = store.get(std::to_string(i));
    peer[static_cast<size_t>(i)] = extractAddress(all, i);
  }
  // The connects this rank opens complete without the peer's process (its kernel accepts): all first.
  std::vector<int> later;
  for (int i = 0; i < size; ++i) {
    if (i == rank) continue;
    const auto opens = gloo_initiates(own[static_cast<size_t>(i)], peer[static_cast<size_t>(i)]);
    if (opens.value_or(true)) {
      transport->getPair(i)->connect(peer[static_cast<size_t>(i)]);
    } else {
      later.push_back(i);
    }
  }
  // Then wait for the ones the peers open, which none of them waits on anything to start.
  for (const int i : later) transport->getPair(i)->connect(peer[static_cast<size_t>(i)]);

  device_ = device;
  transportContext_ = std::move(transport);
}

}  // namespace shoal::comm

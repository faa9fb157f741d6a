// What the Gloo backend relies on beyond Gloo's documented interface, checked where the compiler can:
// pair_sockets.cpp finds a pair's socket from its tcp::Address and parses the peers' published address
// blobs; mesh_connect.cpp lays out and publishes those blobs itself, fills in the protected members of
// rendezvous::Context and predicts which side of a pair connects. Written against Debian's Gloo
// 0.0~git20220518 (GLOO_VERSION 0.5.0, which Gloo has not bumped for its later snapshots), so the version
// alone cannot tell snapshots apart: tests/comm_wrap/gloo_assumptions_test.cpp checks the behaviour on a
// real mesh and fails with a message that names the assumption that broke.
#pragma once

#include <gloo/config.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/address.h>
#include <sys/socket.h>

#include <type_traits>
#include <vector>

namespace shoal::comm::gloo_assumptions {

static_assert(GLOO_VERSION_MAJOR == 0 && GLOO_VERSION_MINOR == 5,
              "src/comm_wrap/gloo (pair_sockets.cpp, mesh_connect.cpp) was written against Gloo 0.5 (Debian's "
              "0.0~git20220518): check gloo_assumptions.hpp and run the comm_gloo_assumptions test before "
              "building against another Gloo");
static_assert(GLOO_HAVE_TRANSPORT_TCP, "the Gloo backend needs Gloo's TCP transport");
// A published address is read back from its bytes (pair_sockets.cpp, mesh_connect.cpp).
static_assert(std::is_constructible_v<gloo::transport::tcp::Address, const std::vector<char>&>,
              "Gloo's tcp::Address can no longer be built from its published bytes (pair_sockets.cpp)");
static_assert(std::is_same_v<decltype(std::declval<const gloo::transport::tcp::Address&>().getSockaddr()),
                             const sockaddr_storage&>,
              "Gloo's tcp::Address no longer gives its sockaddr_storage (pair_sockets.cpp matches sockets by it)");
// The bytes of one published address: a sockaddr_storage and a sequence number, fixed in size, so that a
// rank's blob holds one per other rank (pair_sockets.cpp: published_peer_address).
inline constexpr size_t kPublishedAddressBytes = sizeof(sockaddr_storage) + sizeof(ssize_t);

}  // namespace shoal::comm::gloo_assumptions

// A connected TCP pair on loopback, for tests of the stream layer: `client` connected to `server`
// (the accepted end); the listener is closed once the pair is connected. Both ends closed at the end
// unless released.
#pragma once

namespace shoal::test {

struct LoopbackTcpPair {
  int client = -1;
  int server = -1;
  LoopbackTcpPair();
  ~LoopbackTcpPair();
  LoopbackTcpPair(const LoopbackTcpPair&) = delete;
  LoopbackTcpPair& operator=(const LoopbackTcpPair&) = delete;
  // Hands an end's ownership to the caller (it closes it).
  int release_client();
  int release_server();
};

}  // namespace shoal::test

// Test support: loopback ports for tests that need a port number before anything binds it (a seed
// nobody answers on, a --bind address shared by several agents).
#pragma once

#include <cstdint>

namespace shoal::test {

enum class PortProtocol { tcp, udp };

// A port of 127.0.0.1 the OS chose as free for `protocol` (bound to port 0, read back, closed): nothing
// listens on it now, though another process may take it before the caller does. Throws
// std::runtime_error when no socket can be bound.
uint16_t free_loopback_port(PortProtocol protocol);

}  // namespace shoal::test

// Test support: loopback ports for tests that need a port number before anything binds it (a seed
// nobody answers on, a --bind address shared by several agents).
#pragma once

#include <cstdint>

namespace shoal::test {

enum class PortProtocol { tcp, udp };

// A port of 127.0.0.1 that binds now for `protocol` and for the other one too (an agent binds both), chosen at
// random outside the kernel's ephemeral range (ip_local_port_range): a port the OS assigned (bind to 0) goes
// back to the pool every outgoing connection draws from, and one of the test's own connections could take it
// before the agent meant for it binds ("port ... is already in use"; tests/python/agents.py does the same).
// Another process may still take it first. Throws std::runtime_error when none is found.
uint16_t free_loopback_port(PortProtocol protocol);

}  // namespace shoal::test

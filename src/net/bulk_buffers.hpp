// Socket buffers for bulk streams (checkpoint transfers): large enough that one stream keeps a fast link
// busy, never smaller than what the kernel's own buffer autotuning would reach, and left alone where
// the peer is this same machine.
#pragma once

namespace shoal::net {

// What a bulk stream asks for in each direction. Why: the kernel autotunes a TCP send buffer only up
// to net.ipv4.tcp_wmem's maximum (4 MiB by default), below the bandwidth-delay product of a 100 Gb/s
// link with a few hundred microseconds of round trip, so one checkpoint stream could not fill it.
inline constexpr int kBulkBufferBytes = 8 << 20;

// Sizes the send and receive buffers of `fd`, a TCP socket connected or about to connect to a peer on
// another host (`loopback` false), for a bulk stream; call it before connect() where possible.
//   - A direction whose autotuning already reaches kBulkBufferBytes (net.ipv4.tcp_rmem's maximum is 6 to
//     32 MiB on most systems) is left alone: setting SO_RCVBUF or SO_SNDBUF turns autotuning off for the
//     socket and caps the buffer at net.core.rmem_max/wmem_max (doubled), which is often lower.
//   - A loopback stream is left alone: its bytes never leave the machine, and a large buffer only lets
//     more of them fall out of the cache between the sender's copy and the receiver's. Measured here
//     (1 GiB over loopback, 2 cores): an 8 MiB send buffer took 0.56 s against 0.34-0.46 s with the
//     kernel's.
// A refusal by the kernel is ignored: the stream works with the default buffers, only slower.
void size_for_bulk(int fd, bool loopback);

// Whether `fd`'s peer is this machine (127.0.0.0/8, ::1, or an IPv4-mapped loopback); false when the
// socket has no peer or the address cannot be read.
bool peer_is_loopback(int fd);

}  // namespace shoal::net

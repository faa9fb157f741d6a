// Socket buffers for bulk streams (checkpoint transfers): large enough that one stream keeps a fast link
// busy, never smaller than what the kernel's own buffer autotuning would reach.
#pragma once

namespace shoal::net {

// What a bulk stream asks for in each direction. Why: the kernel autotunes a TCP send buffer only up
// to net.ipv4.tcp_wmem's maximum (4 MiB by default), below the bandwidth-delay product of a 100 Gb/s
// link with a few hundred microseconds of round trip, so one checkpoint stream could not fill it.
inline constexpr int kBulkBufferBytes = 8 << 20;

// Sizes `fd`'s send and receive buffers for a bulk stream (call before connect() where possible). A
// direction whose autotuning already reaches kBulkBufferBytes (net.ipv4.tcp_rmem's maximum is 6 MiB
// to 32 MiB on most systems) is left alone: setting SO_RCVBUF or SO_SNDBUF turns autotuning off for
// that socket and caps the buffer at net.core.rmem_max/wmem_max (doubled), which is often lower. A
// refusal by the kernel is ignored: the stream works with the default buffers, only slower.
void size_for_bulk(int fd);

}  // namespace shoal::net

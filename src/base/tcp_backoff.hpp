// Caps TCP's retransmission backoff on one socket (Linux 6.15+, TCP_RTO_MAX_MS).
//
// Why: under sustained packet loss the kernel doubles a connection's retransmission timeout after each
// lost retransmission, up to 120 s. A collective whose last segment is lost a few times in a row then
// waits seconds to minutes for a timer, although the network delivers again long before: the lab
// measured a Gloo allreduce stalled for over 40 s by 10% loss per host. Capping the backoff at 1 s
// bounds such a stall to about a second per lost retransmission. With the cap, a dead peer is also
// given up earlier (tcp_retries2 retransmissions of at most 1 s each, about 15 s), which gossip has
// decided long before anyway.
#pragma once

#include <chrono>
#include <optional>

namespace shoal::net {

// The cap shoal applies to the TCP connections it makes or accepts (collectives, rendezvous,
// checkpoint streams) unless SHOAL_TCP_BACKOFF_CAP_MS says otherwise: 1000 to 120000 (the kernel's
// range), or 0 to leave the kernel's default (the per-netns sysctl net.ipv4.tcp_rto_max_ms) alone.
inline constexpr std::chrono::milliseconds kRetransmissionBackoffCap{1000};

// The cap in force for this process: SHOAL_TCP_BACKOFF_CAP_MS if set and valid (a bad value is
// logged once and the default used), else kRetransmissionBackoffCap; 0 ms means none.
std::chrono::milliseconds configured_backoff_cap();

// A SHOAL_TCP_BACKOFF_CAP_MS value: nullopt when it is not 0 or 1000..120000 (digits only).
std::optional<std::chrono::milliseconds> parse_backoff_cap(const char* text);

enum class BackoffCap { applied, unsupported, failed, off };

// Sets the cap on `fd` (a TCP socket; before connect() it also covers SYN retransmissions). `unsupported`:
// the running kernel predates the option (ENOPROTOOPT), and the kernel default stays. `off`: the
// configured cap is 0, nothing was set.
BackoffCap cap_retransmission_backoff(int fd, std::chrono::milliseconds cap = configured_backoff_cap());

// The cap in force on `fd` in ms, or -1 when the kernel cannot say (for tests and logs).
int retransmission_backoff_ms(int fd);

}  // namespace shoal::net

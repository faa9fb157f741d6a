// TCP keepalive tuned to find a dead connection within seconds (for collectives' connections).
//
// Why: a rank waiting to receive on a connection sends nothing, so TCP has nothing to retransmit and
// cannot notice that the peer's socket is gone. A peer that closes with unread data sends a single
// RST; under loss that RST can be lost, and the waiting rank then sits in its collective until the
// collective's timeout (minutes) while its peers wait for it to rebuild. Keepalive probes, after
// 2 s of silence, draw a new RST from the peer's kernel (or nothing from a host that is gone), so
// the wait ends within seconds. A live peer's kernel answers the probes, however long its trainer
// computes between collectives.
#pragma once

namespace shoal::net {

// SO_KEEPALIVE with the first probe after 2 s idle, then one per second, 5 unanswered ones fail the
// connection. Returns false when the socket refused any of it (not a TCP socket).
bool detect_dead_peers(int fd);

}  // namespace shoal::net

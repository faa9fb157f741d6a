"""Ports for the benchmarks' agents on loopback: a block of consecutive ports free for TCP and UDP now (an agent
binds both on its port)."""
import socket


def free_port_block(n, tries=100):
    """The first of n consecutive ports that are free for TCP and UDP now."""
    for _ in range(tries):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + n >= 65000:
            continue
        if all(_free(p) for p in range(base, base + n)):
            return base
    raise RuntimeError("no block of %d free ports on 127.0.0.1" % n)


def _free(port):
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
        with socket.socket(socket.AF_INET, kind) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                return False
    return True

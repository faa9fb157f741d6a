"""Replayed traffic for the lab: captures real sealed datagrams and TCP hellos off the lab's bridge
(the switch namespace sees every frame between hosts) and sends them again, byte for byte, from an
outsider's namespace to the host they were meant for. Under a cluster key every one must be refused:
a datagram by the receiver's replay guard (`replayed`, or `stale` once the sender's counter has moved
more than the guard's window past it), a hello by the listener's own guard."""

import json
import socket
import struct
import time

ETH_P_ALL = 0x0003  # a tap on every frame; one for IP only would not see frames the bridge takes
PACKET_OUTGOING = 4  # the copy of a frame leaving a bridge port; its ingress copy is the one kept
TCP_SYN = 0x02


def capture(path, port, want_udp, timeout_s):
    """Runs inside the switch namespace: records up to want_udp UDP datagrams to `port` and the first
    data segment of one TCP connection to `port` (its hello, and whatever followed it in the segment),
    each with its destination address, into `path` as JSON. Raises (exit 1) if it saw too little."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.settimeout(0.5)
    udp, tcp, syn_seq = [], [], {}
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and (len(udp) < want_udp or not tcp):
        try:
            frame, addr = s.recvfrom(65536)
        except socket.timeout:
            continue
        if addr[2] == PACKET_OUTGOING or len(frame) < 34 or frame[12:14] != b"\x08\x00":  # IPv4 only
            continue
        ip = frame[14:]
        ihl = (ip[0] & 0x0F) * 4
        total = struct.unpack(">H", ip[2:4])[0]
        proto, src, dst = ip[9], socket.inet_ntoa(ip[12:16]), socket.inet_ntoa(ip[16:20])
        body = ip[ihl:total]
        if proto == 17 and len(body) >= 8:
            sport, dport = struct.unpack(">HH", body[:4])
            if dport == port and len(udp) < want_udp and len(body) > 8:
                udp.append({"dst": dst, "payload": body[8:].hex()})
        elif proto == 6 and len(body) >= 20:
            sport, dport, seq = struct.unpack(">HHI", body[:8])
            offset, flags = (body[12] >> 4) * 4, body[13]
            if dport != port:
                continue
            key = (src, sport, dst)
            if flags & TCP_SYN:
                syn_seq[key] = seq
            elif len(body) > offset and syn_seq.get(key) is not None and seq == (syn_seq[key] + 1) & 0xFFFFFFFF:
                tcp.append({"dst": dst, "payload": body[offset:].hex()})  # the connection's first bytes
                syn_seq[key] = None
    with open(path, "w") as f:
        json.dump({"udp": udp, "tcp": tcp[:1]}, f)
    if len(udp) < want_udp or not tcp:
        raise RuntimeError(f"captured {len(udp)} datagrams and {len(tcp)} connections in {timeout_s} s")


def replay(path, port):
    """Runs inside an outsider's namespace: sends every captured datagram again, and opens a new
    connection that sends the captured first bytes, to the host each was meant for."""
    with open(path) as f:
        got = json.load(f)
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for d in got["udp"]:
        u.sendto(bytes.fromhex(d["payload"]), (d["dst"], port))
        time.sleep(0.002)
    for c in got["tcp"]:
        one_connection(c["dst"], port, bytes.fromhex(c["payload"]))


def replay_elsewhere(path, port, hosts):
    """Runs inside an outsider's namespace: sends every captured datagram and connection opening to every
    host of `hosts` other than the one it was meant for (sealed inputs name their destination)."""
    with open(path) as f:
        got = json.load(f)
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for d in got["udp"]:
        for host in hosts:
            if host != d["dst"]:
                u.sendto(bytes.fromhex(d["payload"]), (host, port))
                time.sleep(0.002)
    for c in got["tcp"]:
        for host in hosts:
            if host != c["dst"]:
                one_connection(host, port, bytes.fromhex(c["payload"]))


def expected_elsewhere(path, hosts):
    """How many inputs replay_elsewhere sends each host: (datagrams, connections)."""
    with open(path) as f:
        got = json.load(f)
    want = {h: [0, 0] for h in hosts}
    for kind, i in (("udp", 0), ("tcp", 1)):
        for d in got[kind]:
            for h in hosts:
                if h != d["dst"]:
                    want[h][i] += 1
    return want


def one_connection(host, port, payload):
    """Opens a connection, sends payload, and reads until the listener hangs up (a reset, or no
    listener at all, is a refusal too)."""
    try:
        with socket.create_connection((host, port), timeout=3) as s:
            s.sendall(payload)
            s.shutdown(socket.SHUT_WR)
            s.settimeout(3)
            while s.recv(65536):
                pass
    except OSError:
        pass


def expected_refusals(path):
    """How many replayed inputs each destination address must refuse: (datagrams, connections)."""
    with open(path) as f:
        got = json.load(f)
    want = {}
    for kind, i in (("udp", 0), ("tcp", 1)):
        for d in got[kind]:
            counts = want.setdefault(d["dst"], [0, 0])
            counts[i] += 1
    return want

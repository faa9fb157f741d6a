"""Connection exhaustion in the netns lab: a keyed cluster of 6 loses a host twice, once in peace and once
while an outsider (no key, a namespace of its own) holds 2,000 idle TCP connections open against the host
with the lowest name and trickles a hello one byte at a time (slow loris). The survivors, the flooded host
among them, must commit the view without the victim within twice the time the peaceful kill took (plus
a small allowance for this shared machine's noise), and the flooded host must say it closed connections
as overloaded: the attack was real and the budgets (src/net/connection_budget) took it.

Registered in lab_scenarios.SCENARIOS. Run alone:
  lab_scenarios.py SHOAL_BINARY flood_kill9
The flood itself runs as `lab_flood.py flood HOST PORT SECONDS` inside the outsider's namespace.
"""

import os
import selectors
import socket
import subprocess
import sys
import time

from lab_hosts import PORT
from lab_net import ns_exec
from lab_shared_checks import check, common_view, progress, victim_dead_ms, wait_removed

FLOOD_CONNECTIONS = 2000
NOISE_ALLOWANCE_MS = 500  # on top of 2x: a 2-core machine runs 6 agents, the monitor and the flood


def flood(host, port, seconds):
    """Keeps FLOOD_CONNECTIONS idle connections open to host:port (reopening each one the agent closes)
    and one slow-loris connection that sends a byte of a hello every 200 ms, for `seconds`."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, FLOOD_CONNECTIONS + 256), hard))
    sel = selectors.DefaultSelector()
    opened = closed = 0

    def connect():
        nonlocal opened
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.connect_ex((host, port))
        sel.register(s, selectors.EVENT_READ)
        opened += 1
        return s

    for _ in range(FLOOD_CONNECTIONS):
        connect()
    print("ready", flush=True)
    loris = None
    next_byte = 0.0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        now = time.monotonic()
        if now >= next_byte:
            next_byte = now + 0.2
            try:
                if loris is None:
                    loris = socket.create_connection((host, port), timeout=1)
                loris.send(b"\x00")  # the first bytes of a length prefix that never completes
            except OSError:
                if loris is not None:
                    loris.close()
                loris = None
        for key, _ in sel.select(timeout=0.05):
            s = key.fileobj
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if not data:  # the agent closed it (or refused): open another, so the pressure stays
                sel.unregister(s)
                s.close()
                closed += 1
                connect()
    print(f"opened {opened} closed {closed}", flush=True)


def overloaded(agent):
    doc = agent.cli("members")
    return doc["rejected"].get("overloaded", 0) if doc else 0


def kill_and_time(lab, victim, survivors, r, prefix):
    t = time.monotonic()
    victim.kill9()
    r[f"{prefix}_detect_ms"] = victim_dead_ms(lab, survivors, victim.name, t, 20)
    times = {}
    wait_removed(lab, survivors, victim.name, t, 40, times)
    r[f"{prefix}_view_change_ms"] = times["view_change_ms"]


def flood_kill9(lab, r):
    """kill -9 of one host in peace, then of another during a flood of idle connections and a slow loris
    against a survivor: the flooded survivors commit within 2x the peaceful time."""
    members = lab.members()
    flooded = members[0]
    e0, _ = common_view(lab)
    kill_and_time(lab, members[5], members[:5], r, "peace")
    members[5].start()
    lab.wait_settled(members, 30, f"{members[5].name} readmitted")

    before = overloaded(flooded)
    seconds = 40
    argv = ns_exec(lab.net.host_ns[6]) + [sys.executable, os.path.abspath(__file__), "flood",
                                          lab.net.addr(flooded.index), str(PORT), str(seconds)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        check(proc.stdout.readline().strip() == "ready", f"the flood did not start: {proc.stderr.read()}")
        lab.monitor.watch(2)  # the agent evicts, the flood reopens: the pressure is on
        survivors = [a for a in members if a is not members[4]]
        kill_and_time(lab, members[4], survivors, r, "flood")
        r["flood_overloaded"] = overloaded(flooded) - before
    finally:
        proc.kill()
        out, _ = proc.communicate(timeout=10)
    r["flood_connections"] = out.strip()
    progress(f"flood_kill9: peace {r['peace_view_change_ms']} ms, under flood {r['flood_view_change_ms']} ms")
    check(r["flood_overloaded"] > 0, "the flooded host closed no connection as overloaded: no real attack")
    limit = 2 * r["peace_view_change_ms"] + NOISE_ALLOWANCE_MS
    check(r["flood_view_change_ms"] <= limit,
          f"under the flood the view took {r['flood_view_change_ms']} ms, over 2x the {r['peace_view_change_ms']} ms "
          f"in peace (+{NOISE_ALLOWANCE_MS})")
    members[4].start()
    lab.wait_settled(members, 30, f"{members[4].name} readmitted after the flood")
    check(common_view(lab)[0] >= e0 + 4, "expected two removals and two readmissions")
    lab.monitor.watch(2)  # closed connections drain before the descriptor check


FLOOD_SCENARIOS = {
    "flood_kill9": (flood_kill9, {"k": 7, "members": 6, "key": True}),
}

if __name__ == "__main__" and len(sys.argv) == 5 and sys.argv[1] == "flood":
    flood(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))

#!/usr/bin/python3
"""View change time of keyed agents with and without a flood of idle TCP connections from one source.

Starts N keyed `shoal agent` processes on loopback and waits for one committed view of all N. Then,
in rounds that alternate between "quiet" and "flood": during a flood round one thread keeps CONNECTIONS
idle connections open from 127.0.0.1 -- the very address the members use -- spread over every agent's
port, closing its oldest and opening a new one as fast as it can (so each agent sees a steady stream of
new unauthenticated arrivals, never a burst that ends); then one agent is SIGKILLed and the time from the
signal until every survivor has logged the commit of a view without it is measured, and a fresh agent
joins (timed too). Commit times come from the agents' own log lines. The quiet rounds are the baseline of
the same run. One JSON line: medians and maxima per condition and their ratio.

usage: bench/connection_flood_bench.py BUILD_DIR [--agents 3] [--rounds 6] [--connections 2000]
"""
import argparse, json, os, resource, signal, socket, subprocess, sys, tempfile, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from view_change_bench import pct, wait_all, COMMIT  # noqa: E402,F401  (same log parsing)
import view_change_bench as vcb  # noqa: E402


class KeyedAgent(vcb.Agent):
    def __init__(self, shoal, name, seed, logdir, key):
        self.name = name
        self.log = os.path.join(logdir, name + ".log")
        argv = [shoal, "--log-level", "info", "agent", "--key-file", key,
                "--name", name, "--bind", "127.0.0.1:0", "--cluster", "bench",
                "--control", os.path.join(logdir, name + ".sock")]
        if seed:
            argv += ["--seeds", seed]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=open(self.log, "w"), text=True)
        line = self.proc.stdout.readline()
        self.addr = line.split("listening on ")[1].split()[0]


class Flood:
    """Keeps `count` idle connections open to the given ports, replacing the oldest continuously."""

    def __init__(self, ports, count):
        self.ports, self.count, self.stop, self.opened = ports, count, False, 0
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        held, i = [], 0
        while not self.stop:
            s = socket.socket()
            s.setblocking(False)
            try:
                s.connect_ex(("127.0.0.1", self.ports()[i % len(self.ports())]))
            except OSError:
                pass
            held.append(s)
            self.opened += 1
            i += 1
            if len(held) > self.count:
                held.pop(0).close()
                time.sleep(0.0005)
        for s in held:
            s.close()

    def end(self):
        self.stop = True
        self.thread.join()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build_dir")
    ap.add_argument("--agents", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--connections", type=int, default=2000)
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    shoal = os.path.join(a.build_dir, "shoal")
    logdir = tempfile.mkdtemp(prefix="shoal-flood-bench-")
    key = os.path.join(logdir, "cluster.key")
    subprocess.run([shoal, "keygen", "--output", key], check=True, stdout=subprocess.DEVNULL)
    n = a.agents
    t_start = time.time()
    agents = [KeyedAgent(shoal, "n000", None, logdir, key)]
    for i in range(1, n):
        agents.append(KeyedAgent(shoal, "n%03d" % i, agents[0].addr, logdir, key))
    if wait_all(agents, t_start, n, 60) is None:
        sys.exit("the %d agents never committed one view (logs in %s)" % (n, logdir))
    times = {"quiet": {"change": [], "join": []}, "flood": {"change": [], "join": []}}
    next_id, arrivals = n, 0
    ports = lambda: [int(x.addr.rsplit(":", 1)[1]) for x in agents]  # noqa: E731
    try:
        for r in range(a.rounds * 2):
            cond = "flood" if r % 2 else "quiet"
            flood = Flood(ports, a.connections) if cond == "flood" else None
            if flood:
                time.sleep(1.0)  # the flood is at full strength before the crash
            victim = agents[(r * 7) % len(agents)]
            survivors = [x for x in agents if x is not victim]
            t0 = time.time()
            victim.proc.send_signal(signal.SIGKILL)
            victim.proc.wait()
            took = wait_all(survivors, t0, n - 1, 60)
            if took is None:
                sys.exit("round %d (%s): the survivors never committed a view of %d (logs in %s)" % (r, cond, n - 1, logdir))
            times[cond]["change"].append(took)
            agents = survivors
            t1 = time.time()
            agents.append(KeyedAgent(shoal, "n%03d" % next_id, agents[0].addr, logdir, key))
            next_id += 1
            took = wait_all(agents, t1, n, 60)
            if took is None:
                sys.exit("round %d (%s): the join never reached every member (logs in %s)" % (r, cond, logdir))
            times[cond]["join"].append(took)
            if flood:
                flood.end()
                arrivals += flood.opened
    finally:
        for x in agents:
            x.proc.kill()
    ms = lambda v: round(v * 1000)  # noqa: E731
    q, f = times["quiet"], times["flood"]
    print(json.dumps({"result": "view_change_under_idle_flood", "agents": n, "rounds_each": a.rounds,
                      "idle_connections": a.connections, "flood_arrivals": arrivals, "keyed": True,
                      "crash_view_all_p50_ms": ms(pct(f["change"], 50)), "crash_view_all_max_ms": ms(max(f["change"])),
                      "join_view_all_p50_ms": ms(pct(f["join"], 50)),
                      "baseline_crash_view_all_p50_ms": ms(pct(q["change"], 50)),
                      "baseline_crash_view_all_max_ms": ms(max(q["change"])),
                      "baseline_join_view_all_p50_ms": ms(pct(q["join"], 50)),
                      "crash_ratio_p50": round(pct(f["change"], 50) / pct(q["change"], 50), 2)}))


if __name__ == "__main__":
    main()

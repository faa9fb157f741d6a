#!/usr/bin/python3
"""Crash or graceful leave of one host to the new committed view at every survivor, real agents.

Starts N `shoal agent` processes on loopback, waits for one committed view of all N, then repeats:
SIGKILL one agent (or SIGTERM it, for --mode leave), and times from the signal until every survivor
has logged the commit of a view without it; then starts a fresh agent (a new name, so no hold-down
applies) and waits for the view of N again. Commit times come from the agents' own log lines
(millisecond timestamps, same clock). The baseline, measured in the same run, is the time a join
takes to reach every member's committed view. One JSON line per result.

usage: bench/view_change_bench.py BUILD_DIR [--agents 16] [--rounds 10] [--mode crash|leave]
"""
import argparse, datetime, json, os, re, signal, subprocess, sys, tempfile, time

COMMIT = re.compile(r"^(\S+) info\s+\[membership\] view epoch (\d+) committed: (\d+) members")


def pct(values, p):
    v = sorted(values)
    k = min(len(v) - 1, max(0, int(round(p / 100.0 * (len(v) - 1)))))
    return v[k]


class Agent:
    def __init__(self, shoal, name, seed, logdir):
        self.name = name
        self.log = os.path.join(logdir, name + ".log")
        argv = [shoal, "--log-level", "info", "agent", "--insecure",
                "--name", name, "--bind", "127.0.0.1:0", "--cluster", "bench",
                "--control", os.path.join(logdir, name + ".sock")]
        if seed:
            argv += ["--seeds", seed]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=open(self.log, "w"), text=True)
        line = self.proc.stdout.readline()
        self.addr = line.split("listening on ")[1].split()[0]

    def commits(self):
        """[(wall time, epoch, size)] from the log."""
        out = []
        with open(self.log) as f:
            for line in f:
                m = COMMIT.match(line)
                if m:
                    t = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f").timestamp()
                    out.append((t, int(m.group(2)), int(m.group(3))))
        return out


def first_commit_after(agent, t0, size):
    for (t, epoch, n) in agent.commits():
        if t >= t0 - 0.002 and n == size:
            return t
    return None


def wait_all(agents, t0, size, timeout):
    end = time.time() + timeout
    while time.time() < end:
        ts = [first_commit_after(a, t0, size) for a in agents]
        if all(ts):
            return max(ts) - t0
        time.sleep(0.05)
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build_dir")
    ap.add_argument("--agents", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--mode", choices=["crash", "leave"], default="crash")
    a = ap.parse_args()
    shoal = os.path.join(a.build_dir, "shoal")
    logdir = tempfile.mkdtemp(prefix="shoal-view-bench-")
    n = a.agents
    t_start = time.time()
    agents = [Agent(shoal, "n000", None, logdir)]
    for i in range(1, n):
        agents.append(Agent(shoal, "n%03d" % i, agents[0].addr, logdir))
    if wait_all(agents, t_start, n, 60) is None:
        sys.exit("the %d agents never committed one view (logs in %s)" % (n, logdir))
    changes, joins = [], []
    next_id = n
    try:
        for r in range(a.rounds):
            victim = agents[(r * 7) % len(agents)]  # spread over rank positions, rank 0 included
            survivors = [x for x in agents if x is not victim]
            t0 = time.time()
            victim.proc.send_signal(signal.SIGKILL if a.mode == "crash" else signal.SIGTERM)
            victim.proc.wait()
            took = wait_all(survivors, t0, n - 1, 30)
            if took is None:
                sys.exit("round %d: the survivors never committed a view of %d (logs in %s)" % (r, n - 1, logdir))
            changes.append(took)
            agents = survivors
            t1 = time.time()
            joiner = Agent(shoal, "n%03d" % next_id, agents[0].addr, logdir)
            next_id += 1
            agents.append(joiner)
            took = wait_all(agents, t1, n, 30)
            if took is None:
                sys.exit("round %d: the join never reached every member (logs in %s)" % (r, logdir))
            joins.append(took)
    finally:
        for x in agents:
            x.proc.kill()
    print(json.dumps({"result": "view_change_" + a.mode, "agents": n, "rounds": a.rounds,
                      "view_all_p50_ms": round(pct(changes, 50) * 1000), "view_all_p99_ms": round(pct(changes, 99) * 1000),
                      "view_all_max_ms": round(max(changes) * 1000),
                      "baseline_join_view_all_p50_ms": round(pct(joins, 50) * 1000)}))


if __name__ == "__main__":
    main()

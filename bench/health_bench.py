#!/usr/bin/python3
"""Node health on loopback: what carrying the step timings costs, and how soon a slow host is named.

cost: N example trainers (embedded agents, Gloo) with --step-ms 0, so a step is its collectives and
little else, run S steps with the timing exchange on (--health-every 5, the default) and off
(--health-every 0), alternating, R runs each; reports the median step time of each (from rank 0's step
lines, after a warm-up) and their difference per step. The run with the exchange off is the baseline,
measured in the same run.

detection: N trainers with --step-ms MS, one of them with 30% more; reports for each run the steps from
the first step in the world of N until every host's line names the slow host, and whether any other host
was ever named.

One JSON line per result.
usage: bench/health_bench.py BUILD_DIR [--hosts 6] [--steps 400] [--runs 3] [--step-ms 100]
"""
import argparse, json, os, select, statistics, subprocess, sys, tempfile, time


def start(binary, name, seed, steps, extra, logdir):
    argv = [binary, "--insecure", "--name", name, "--bind", "127.0.0.1:0", "--steps", str(steps), "--cluster",
            "health-bench-%d" % os.getpid(), "--control-socket", "none"] + extra
    if seed:
        argv += ["--seeds", seed]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=open(os.path.join(logdir, name + ".log"), "a"),
                         text=True, bufsize=1)
    first = json.loads(p.stdout.readline())
    return p, first["addr"]


def run_hosts(binary, hosts, steps, extra_of, timeout_s=180):
    """Starts the hosts (all needed for the first view) and returns each one's step lines."""
    with tempfile.TemporaryDirectory() as logdir:
        procs, seed = {}, ""
        for i in range(hosts):
            name = "b%d" % i
            procs[name], addr = start(binary, name, seed, steps, ["--min-hosts", str(hosts)] + extra_of(i), logdir)
            seed = seed or addr
        lines = {n: [] for n in procs}
        deadline = time.monotonic() + timeout_s
        open_fds = {p.stdout.fileno(): n for n, p in procs.items()}
        while open_fds and time.monotonic() < deadline:
            ready, _, _ = select.select(list(open_fds), [], [], 1.0)
            for fd in ready:
                n = open_fds[fd]
                line = procs[n].stdout.readline()
                if not line:
                    del open_fds[fd]
                    continue
                try:
                    doc = json.loads(line)
                except ValueError:
                    continue
                if "step" in doc:
                    lines[n].append(doc)
        for p in procs.values():
            if p.poll() is None:
                p.kill()
            p.wait()
        return lines


def median_step_s(lines, warmup):
    steps = [l for l in lines if l["world"] > 0][warmup:]
    gaps = [b["t"] - a["t"] for a, b in zip(steps, steps[1:]) if b["step"] == a["step"] + 1]
    return statistics.median(gaps) if gaps else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--hosts", type=int, default=6)
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--step-ms", type=int, default=100)
    a = ap.parse_args()
    binary = os.path.join(a.build, "examples", "allreduce_trainer")

    on, off = [], []
    for _ in range(a.runs):
        for every, out in ((0, off), (5, on)):
            lines = run_hosts(binary, a.hosts, a.steps, lambda i: ["--step-ms", "0", "--health-every", str(every)])
            out.append(median_step_s(lines["b0"], 20))
    on_ms = statistics.median(x for x in on if x) * 1e3
    off_ms = statistics.median(x for x in off if x) * 1e3
    print(json.dumps({"bench": "health_exchange_cost", "hosts": a.hosts, "steps": a.steps, "runs": a.runs,
                      "exchange_every": 5, "step_ms_with_exchange": round(on_ms, 4),
                      "baseline_step_ms_without": round(off_ms, 4), "cost_per_step_ms": round(on_ms - off_ms, 4),
                      "runs_with_ms": [round(x * 1e3, 4) for x in on if x],
                      "runs_without_ms": [round(x * 1e3, 4) for x in off if x]}), flush=True)

    slow_ms = a.step_ms * 13 // 10
    for run in range(a.runs):
        lines = run_hosts(binary, a.hosts, 60,
                          lambda i: ["--step-ms", str(slow_ms if i == a.hosts // 2 else a.step_ms)])
        slow = "b%d" % (a.hosts // 2)
        after = {}
        wrong = False
        for n, ls in lines.items():
            full = [l for l in ls if l["world"] == a.hosts]
            named = [l for l in full if slow in l.get("stragglers", [])]
            wrong = wrong or any(set(l.get("stragglers", [])) - {slow} for l in ls)
            after[n] = named[0]["step"] - full[0]["step"] if named and full else None
        worst = None if any(v is None for v in after.values()) else max(after.values())
        print(json.dumps({"bench": "health_detection", "run": run, "hosts": a.hosts, "step_ms": a.step_ms,
                          "slow_step_ms": slow_ms, "steps_until_every_host_named_it": worst,
                          "per_host": after, "another_host_named": wrong}), flush=True)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Node health on loopback: what carrying the step timings costs, and how soon a slow host is named.

cost: N example trainers (embedded agents, Gloo) with --cost-step-ms MS (default 20; with 0 the step
time of Gloo on loopback sits at a fixed 40 ms that hides any difference), run S steps with the timing exchange on (--health-every 5, the default) and off
(--health-every 0), alternating, R runs each; from rank 0's step lines after a warm-up it reports the
median time of a step that holds an exchange and of one that does not, their difference (what one
exchange costs) and that difference over 5 (the cost per step); the median step of the runs with the
exchange off is the baseline, measured in the same run.

detection: N trainers with --step-ms MS, one of them with 30% more; reports for each run the steps from
the first step in the world of N until every host's line names the slow host, and whether any other host
was ever named.

eviction: N trainers with a cluster key and --evict-stragglers (--evict-after, default 3 s), one of them 30%
slower, and the same N all healthy (the baseline, measured in the same run). From host b0's step lines: the
healthy step time (median gap, all healthy), the step time while the slow host is named (world of N), the
step time after its eviction (world of N - 1), the seconds from the first line that names it to the
eviction's rebuild, and to the first step from which the median of 5 consecutive gaps is within 10% of the
healthy figure (the target is 5 s).

One JSON line per result.
usage: bench/health_bench.py BUILD_DIR [--hosts 6] [--steps 400] [--runs 3] [--step-ms 100] [--cost-step-ms 20]
                              [--evict-after 3] [--eviction-steps 160] [--only cost|detection|eviction]
"""
import argparse, json, os, select, statistics, subprocess, sys, tempfile, time


def start(binary, name, seed, steps, extra, logdir):
    keyed = "--key-file" in extra
    argv = [binary] + ([] if keyed else ["--insecure"]) + ["--name", name, "--bind", "127.0.0.1:0", "--steps", str(steps), "--cluster",
            "health-bench-%d" % os.getpid(), "--control-socket", "none"] + extra
    if seed:
        argv += ["--seeds", seed]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=open(os.path.join(logdir, name + ".log"), "a"),
                         text=True, bufsize=1)
    first = json.loads(p.stdout.readline())
    return p, first["addr"]


def run_hosts(binary, hosts, steps, extra_of, timeout_s=180, done=None, min_hosts=None):
    """Starts the hosts (all needed for the first view) and returns each one's step lines; stops early (killing
    the rest) once done(lines) holds."""
    with tempfile.TemporaryDirectory() as logdir:
        procs, seed = {}, ""
        for i in range(hosts):
            name = "b%d" % i
            procs[name], addr = start(binary, name, seed, steps, ["--min-hosts", str(min_hosts or hosts)] + extra_of(i),
                                      logdir)
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
            if done is not None and done(lines):
                break
        for p in procs.values():
            if p.poll() is None:
                p.kill()
            p.wait()
        return lines


def gaps_s(lines, warmup, after_exchange):
    """Gaps between consecutive step lines after a warm-up: those that hold an exchange (the line of a step
    that follows one, step % 5 == 0) or the others."""
    steps = [l for l in lines if l["world"] > 0][warmup:]
    return [b["t"] - a["t"] for a, b in zip(steps, steps[1:])
            if b["step"] == a["step"] + 1 and (b["step"] % 5 == 0) == after_exchange]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--hosts", type=int, default=6)
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--step-ms", type=int, default=100)
    ap.add_argument("--cost-step-ms", type=int, default=20)
    ap.add_argument("--evict-after", type=float, default=3.0)
    ap.add_argument("--eviction-steps", type=int, default=160, help="eviction: the steps of the run with a slow host")
    ap.add_argument("--only", choices=["cost", "detection", "eviction"])
    a = ap.parse_args()
    binary = os.path.join(a.build, "examples", "allreduce_trainer")

    if a.only in (None, "cost"):
        cost(a, binary)
    if a.only in (None, "detection"):
        detection(a, binary)
    if a.only in (None, "eviction"):
        eviction(a, a.build, binary)


def cost(a, binary):
    with_exchange, others, baseline = [], [], []
    for _ in range(a.runs):
        lines = run_hosts(binary, a.hosts, a.steps, lambda i: ["--step-ms", str(a.cost_step_ms), "--health-every", "0"])
        baseline += gaps_s(lines["b0"], 20, False) + gaps_s(lines["b0"], 20, True)
        lines = run_hosts(binary, a.hosts, a.steps, lambda i: ["--step-ms", str(a.cost_step_ms), "--health-every", "5"])
        with_exchange += gaps_s(lines["b0"], 20, True)
        others += gaps_s(lines["b0"], 20, False)
    ms = lambda v: round(statistics.median(v) * 1e3, 3)
    exchange_ms = ms(with_exchange) - ms(others)
    print(json.dumps({"bench": "health_exchange_cost", "hosts": a.hosts, "steps": a.steps, "runs": a.runs,
                      "step_ms": a.cost_step_ms, "exchange_every": 5,
                      "step_with_exchange_ms": ms(with_exchange), "step_without_ms": ms(others),
                      "baseline_step_ms_exchange_off": ms(baseline), "exchange_ms": round(exchange_ms, 3),
                      "cost_per_step_ms": round(exchange_ms / 5, 3)}), flush=True)


def detection(a, binary):
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


def median_gap_s(lines, world, after_t=0.0, before_t=float("inf")):
    steps = [l for l in lines if l["world"] == world and after_t < l["t"] < before_t]
    gaps = [b["t"] - a["t"] for a, b in zip(steps, steps[1:]) if b["step"] == a["step"] + 1 and "rebuild_ms" not in b]
    return statistics.median(gaps) if gaps else None


def eviction(a, build, binary):
    slow_ms = a.step_ms * 13 // 10
    steps = a.eviction_steps
    with tempfile.TemporaryDirectory() as keydir:
        key = os.path.join(keydir, "cluster.key")
        with open(key, "w") as f:
            f.write(subprocess.run([os.path.join(build, "shoal"), "keygen"], capture_output=True, text=True,
                                   check=True).stdout)
        os.chmod(key, 0o600)
        keyed = ["--key-file", key, "--evict-stragglers", "--evict-after", str(a.evict_after)]
        slow = "b%d" % (a.hosts // 2)
        for run in range(a.runs):
            healthy = run_hosts(binary, a.hosts, 60, lambda i: ["--step-ms", str(a.step_ms)] + keyed)
            healthy_s = median_gap_s(healthy["b0"], a.hosts)
            # The survivors end after `steps`; the evicted host waits to be readmitted: stop once b0 is done.
            lines = run_hosts(binary, a.hosts, steps,
                              lambda i: ["--step-ms", str(slow_ms if i == a.hosts // 2 else a.step_ms)] + keyed,
                              done=lambda ls: bool(ls["b0"]) and ls["b0"][-1]["step"] == steps - 1,
                              min_hosts=a.hosts - 1)  # the job may shrink by one: the straggler
            b0 = lines["b0"]
            named = [l for l in b0 if l["world"] == a.hosts and slow in l.get("stragglers", [])]
            rebuilt = [l for l in b0 if l["world"] == a.hosts - 1 and "rebuild_ms" in l]
            out = {"bench": "health_eviction", "run": run, "hosts": a.hosts, "step_ms": a.step_ms,
                   "slow_step_ms": slow_ms, "evict_after_s": a.evict_after,
                   "healthy_step_ms": round(healthy_s * 1e3, 1) if healthy_s else None}
            if named and rebuilt and healthy_s:
                t_named, t_evicted = named[0]["t"], rebuilt[0]["t"]
                slow_s = median_gap_s(b0, a.hosts, t_named - 5, t_evicted)
                after_s = median_gap_s(b0, a.hosts - 1, t_evicted)
                after = [l for l in b0 if l["t"] >= t_evicted and l["world"] == a.hosts - 1]
                back = None
                for i in range(len(after) - 5):
                    window = [after[j + 1]["t"] - after[j]["t"] for j in range(i, i + 5)]
                    if statistics.median(window) <= 1.1 * healthy_s:
                        back = after[i]["t"] - t_named
                        break
                out.update({"named_step_ms": round(slow_s * 1e3, 1) if slow_s else None,
                            "after_eviction_step_ms": round(after_s * 1e3, 1) if after_s else None,
                            "verdict_to_eviction_s": round(t_evicted - t_named, 2),
                            "verdict_to_within_10pct_s": round(back, 2) if back is not None else None,
                            "target_s": 5.0})
            else:
                out.update({"error": "no verdict, no eviction or no healthy figure", "named": bool(named),
                            "evicted": bool(rebuilt)})
            print(json.dumps(out), flush=True)


if __name__ == "__main__":
    sys.exit(main())

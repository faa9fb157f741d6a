#!/usr/bin/python3
"""A silent host, time and again: the recovery of N training hosts when one of them goes silent.

Every host is a network namespace of the netns lab (tests/lab) running the example trainer with its
agent embedded (keyed cluster, Gloo). Repeats: cut one host's link (every packet to and from it dropped:
no RST, no refused port, no goodbye, as when a machine loses power or its cable), time until every
survivor has completed a correct step in the world of N-1, then kill what ran on the cut host, heal the
link and start a fresh host in its namespace (a new name) until all N train again. Victims alternate
between rank 0's host (also the view's proposer) and another. Needs root (namespaces, nftables).

One JSON line per result: `silent_to_next_step` (p50, p99, max ms) and one `silent_phase` line per phase,
each from the cut, read from the survivors' logs (earliest survivor for suspect and dead_first, last
survivor for the rest): suspect, dead_first, dead_all, view_committed, rebuilt (communicator ready),
next_step; the baseline is the median step time with no failure, measured in the same run. The
survivors' collectives do not fail on their own here (no RST reaches them): they wait until the view
without the silent host aborts them, so detection is the normal probe path and its suspicion timeout.

usage: bench/silent_host_bench.py BUILD_DIR [--hosts 8] [--cuts 20] [--step-ms 20]
"""
import argparse, json, os, statistics, sys, time

HERE = os.path.dirname(os.path.realpath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "lab"))

from trainer_kill_bench import print_phases, recovery_phases, spread  # noqa: E402  (same folder)
from lab_hosts import Lab  # noqa: E402


class Steps:
    """The step lines of every host's trainer, read incrementally (re-reading whole files at every poll
    would load the 2 cores the hosts run on)."""

    def __init__(self):
        self.offset, self.lines, self.partial = {}, {}, {}

    def of(self, host):
        path = host.out_path
        with open(path, "rb") as f:
            f.seek(self.offset.get(path, 0))
            chunk = f.read()
        self.offset[path] = self.offset.get(path, 0) + len(chunk)
        text = self.partial.get(path, b"") + chunk
        *complete, self.partial[path] = text.split(b"\n")
        got = self.lines.setdefault(path, [])
        for line in complete:
            try:
                x = json.loads(line)
            except ValueError:
                x = {"unparsed": line.decode(errors="replace")}
            if "step" in x or "unparsed" in x:
                got.append(x)
        return got

    def first_good(self, host, since, world):
        """Wall time of the host's first correct step in a world of `world` that ended after `since`."""
        for x in self.of(host):
            if x.get("t", 0) > since and x.get("world") == world and x.get("ok"):
                return x["t"]
        return None


def wait_for(cond, timeout_s, what):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(0.05)
    sys.exit("timed out after %d s waiting for %s" % (timeout_s, what))


def rank0_name(host):
    return next(r["name"] for r in host.cli("view")["ranks"] if r["rank"] == 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build_dir")
    ap.add_argument("--hosts", type=int, default=8)
    ap.add_argument("--cuts", type=int, default=20)
    ap.add_argument("--step-ms", type=int, default=20)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root: every host is a network namespace")
    shoal = os.path.realpath(os.path.join(a.build_dir, "shoal"))
    trainer = os.path.realpath(os.path.join(a.build_dir, "examples", "allreduce_trainer"))
    os.environ["PATH"] += ":/usr/sbin:/sbin"
    n = a.hosts
    flags = ["--steps", "100000000", "--step-ms", str(a.step_ms)]
    with Lab(shoal, k=n, key=True, trainer_binary=trainer, embedded=flags, min_hosts=n // 2 + 1,
             log_level="info") as lab:
        live = list(lab.agents)
        steps = Steps()
        first_good_step = steps.first_good
        wait_for(lambda: all(first_good_step(h, 0, n) for h in live), 60, "the %d hosts to train together" % n)
        time.sleep(1.0)
        ts = [x["t"] for x in steps.of(live[0])[-20:]]
        step_s = statistics.median([b - a_ for a_, b in zip(ts, ts[1:])])
        totals, join_s = [], []
        phases = {p: [] for p in ("collective_failed", "suspect", "dead_first", "dead_all", "view_committed", "rebuilt",
                                  "next_step")}
        for k in range(a.cuts):
            r0 = rank0_name(live[-1])
            others = [h for h in live if h.name != r0]
            victim = next(h for h in live if h.name == r0) if k % 2 == 0 else others[(k // 2) % len(others)]
            survivors = [h for h in live if h is not victim]
            t_cut = time.time()
            lab.net.partition([[victim.index], [h.index for h in survivors]])
            done = wait_for(lambda: all(first_good_step(h, t_cut, n - 1) for h in survivors) and
                            [first_good_step(h, t_cut, n - 1) for h in survivors], 30,
                            "the survivors of cut %d to train" % k)
            totals.append(max(done) - t_cut)
            time.sleep(0.2)  # let the last log lines land
            found = recovery_phases([h.log_path for h in survivors], victim.name, n - 1, t_cut)
            for name, value in found.items():
                if name in phases:
                    phases[name].append(value - t_cut)
            phases["next_step"].append(totals[-1])
            # The cut host does not come back: a fresh one (a new name) takes its namespace.
            lab.kill_host(victim.index)
            lab.net.heal()
            fresh = lab.add_agent(victim.index, name="h%dc%d" % (victim.index, k),
                                  seeds=[h.index for h in survivors])
            t_join = time.time()
            fresh.start()
            live = survivors + [fresh]
            wait_for(lambda: all(first_good_step(h, t_join, n) for h in live), 60,
                     "the world of %d to regrow after cut %d" % (n, k))
            join_s.append(max(first_good_step(h, t_join, n) for h in live) - t_join)
            print(json.dumps({"cut": k, "victim": victim.name, "next_step_ms": round(totals[-1] * 1000)}),
                  file=sys.stderr, flush=True)
        bad = sum(1 for h in lab.agents for x in steps.of(h) if not x.get("ok"))
        base = {"hosts": n, "cuts": a.cuts, "step_ms": a.step_ms, "keyed": True,
                "baseline_step_ms": round(step_s * 1000, 1), "failed_checks": bad}
        print(json.dumps(dict(base, result="silent_to_next_step", **spread(totals))))
        print(json.dumps(dict(base, result="join_after_cut_to_first_step", **spread(join_s))))
        print_phases(base, "silent_phase", phases)


if __name__ == "__main__":
    main()

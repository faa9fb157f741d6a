#!/usr/bin/python3
"""The ETTR of an elastic PyTorch job with kills beside the same job without (issue 47's "what the run lost").

Two runs of the same job, one after the other: N loopback hosts of `shoal agent --workers connect --`
`examples/python/elastic_ddp.py --steps S` (the hosts and flags of bench/drain_bench.py), each trainer's run
ending at step S with its end line, which carries its ETTR (Elastic.stats(): productive training time over
wall time, from the trainer's start). The baseline run has no kill. The other SIGKILLs a whole host K times,
evenly over the run (first a host of the first N, then the newcomer that replaced the one before, so that
N - 1 of the first hosts live through the whole run), and starts a fresh host through a live one each time.
Counted: the ETTR of the hosts that ran from start to end, the same in both runs.

One line per run {"bench": "ettr", "run": "no_kills" | "kills", "ettr_p50", "ettr_min", "wall_s", ...}; then
{"bench": "ettr", "result": "summary", "ettr_no_kills", "ettr_kills", "ettr_ratio", "kills", ...}.

usage: ettr_bench.py [--hosts 4] [--steps 600] [--kills 2] [--step-ms 20] [--build DIR] [--python PY]
                     [--keep-logs]
"""
import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
import time

import torch_elastic_hosts as teh  # bench/torch_elastic_hosts.py: Host, log, pct, wait_for
from drain_bench import Round, remove_segments  # bench/drain_bench.py: an elastic DDP job's hosts
from shard_bench import choose_python, torch_of  # bench/shard_bench.py: the interpreter of the hosts


def done_line(host):
    with host.lock:
        return next((e for e in host.events if e.get("event") == "done"), None)


def wait_done(hosts, timeout):
    end = time.time() + timeout
    while time.time() < end:
        if all(done_line(h) for h in hosts):
            return True
        for h in hosts:
            if not h.alive() and not done_line(h):
                raise RuntimeError("host %s exited (rc %s) before its end line" % (h.name, h.proc.returncode))
        time.sleep(0.05)
    return False


def newest_step(hosts):
    return max((h.last()["step"] for h in hosts if h.last()), default=-1)


def one_run(a, logdir, kills):
    r = Round(a, logdir)
    r.job += "k" if kills else "n"
    started = time.time()
    first = [r.start(None, a.steps)]
    first += [r.start(first[0].addr, a.steps) for _ in range(a.hosts - 1)]
    alive, everyone = list(first), list(first)
    try:
        replaced = None
        for k in range(kills):
            at = (k + 1) * a.steps // (kills + 1)
            if not teh.wait_for(lambda: newest_step(alive) >= at, 300, alive, "step %d" % at):
                raise RuntimeError("the job did not reach step %d" % at)
            victim = replaced if replaced is not None else first[-1]
            victim.kill()
            alive.remove(victim)
            replaced = r.start(alive[0].addr, a.steps)
            alive.append(replaced)
            everyone.append(replaced)
        if not wait_done(alive, 600):
            raise RuntimeError("the job did not end within 600 s")
        wall = time.time() - started
        whole = [h for h in first if done_line(h)]
        ettrs = [done_line(h)["ettr"] for h in whole]
        redone = sum(done_line(h)["discarded"] + done_line(h)["steps_redone"] for h in whole)
        return {"bench": "ettr", "run": "kills" if kills else "no_kills", "hosts": a.hosts, "kills": kills,
                "steps": a.steps, "step_ms_target": a.step_ms, "whole_run_hosts": len(whole),
                "ettr_p50": round(teh.pct(ettrs, 50), 4), "ettr_min": round(min(ettrs), 4),
                "steps_discarded_or_redone": redone, "wall_s": round(wall, 2)}
    finally:
        for h in everyone:
            h.kill()
        remove_segments(r.job)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hosts", type=int, default=4)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--kills", type=int, default=2)
    ap.add_argument("--step-ms", type=int, default=20)
    ap.add_argument("--build", default=os.path.join(teh.REPO, "build"))
    ap.add_argument("--python", default="")
    ap.add_argument("--keep-logs", action="store_true")
    a = ap.parse_args()
    if a.hosts < 3 or a.kills < 1 or a.steps < 10 * (a.kills + 1):
        ap.error("--hosts at least 3, --kills at least 1, --steps at least 10 per kill and one more")
    a.wrapper = "ddp"
    teh.PY = choose_python(a)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # a timeout around the bench still ends every host
    logdir = tempfile.mkdtemp(prefix="shoal-ettr-bench-")
    try:
        rows = []
        for kills in (0, a.kills):
            rows.append(one_run(a, logdir, kills))
            print(json.dumps(rows[-1]), flush=True)
        base, hit = rows[0]["ettr_p50"], rows[1]["ettr_p50"]
        print(json.dumps({"bench": "ettr", "result": "summary", "torch": torch_of(teh.PY), "hosts": a.hosts,
                          "steps": a.steps, "kills": a.kills, "ettr_no_kills": base, "ettr_kills": hit,
                          "ettr_ratio": round(hit / base, 4) if base > 0 else None,
                          "wall_s_no_kills": rows[0]["wall_s"], "wall_s_kills": rows[1]["wall_s"]}), flush=True)
    finally:
        if a.keep_logs:
            teh.log("logs in %s" % logdir)
        else:
            shutil.rmtree(logdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

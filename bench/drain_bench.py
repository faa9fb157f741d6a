#!/usr/bin/python3
"""`shoal drain` of one host of an elastic PyTorch job (issue 47's drain): time from the drain request to every
survivor's next good step, and the steps the survivors discarded or redid.

N loopback hosts run `shoal agent --workers connect -- examples/python/elastic_ddp.py` (or elastic_fsdp.py with
--wrapper fsdp: a flash checkpoint every step, restored at every view change); each round drains one host
(alternately the host of rank 0 and another) with `shoal drain`: its trainer finishes the step, saves, waits
until a peer holds that version and ends; the agent leaves gracefully and exits. drain_to_step_ms: from just
before `shoal drain` runs to the slowest survivor's first good step in the world of N-1 (a step line's `t`
against the bench's wall clock); drain_steps_redone: the survivors' discarded plus redone steps (0 is the
target), drained_exit: the drained agent's exit status (0). A fresh host then joins for the next round.
The baseline, measured in the same run: step_ms, the median interval between two steps in the world of N
before the drain (what the survivors pay anyway for one step).

Per drain one line {"bench": "drain", "result": "drain", ...}; then a summary with drain_to_step_p50_ms, its
max, drain_steps_redone (the total), step_ms_p50 and met (p50 <= 500 ms and nothing redone).

usage: drain_bench.py [--hosts 4] [--drains 5] [--step-ms 20] [--wrapper ddp|fsdp] [--build DIR] [--python PY]
                      [--keep-logs]
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import torch_elastic_hosts as teh  # bench/torch_elastic_hosts.py: Host, log, pct, wait_for
from shard_bench import choose_python, new_enough, torch_of  # bench/shard_bench.py: the interpreter of the hosts

TARGET_P50_MS = 500


class Round:
    def __init__(self, a, logdir):
        self.a, self.logdir, self.counter = a, logdir, 0
        self.job = "drb%d" % os.getpid()
        self.shoal = os.path.join(a.build, "shoal")

    def control(self, name):
        return os.path.join(self.logdir, name + ".sock")

    def start(self, seed, steps=100000000):
        name = "%s-h%d" % (self.job, self.counter)
        self.counter += 1
        script = "elastic_fsdp.py" if self.a.wrapper == "fsdp" else "elastic_ddp.py"
        worker = [teh.PY, os.path.join(teh.REPO, "examples", "python", script), "--steps", str(steps),
                  "--step-ms", str(self.a.step_ms), "--ckpt-every", "1" if self.a.wrapper == "fsdp" else "100000000"]
        argv = [self.shoal, "agent", "--insecure", "--name", name, "--host", name, "--bind", "127.0.0.1:0",
                "--cluster", self.job, "--job", self.job, "--control", self.control(name), "--min-hosts", "2",
                "--workers", "connect", "--log-level", "info"] + (["--seeds", seed] if seed else []) + ["--"] + worker
        env = dict(os.environ, PYTHONPATH=os.path.join(self.a.build, "python"))
        host = teh.Host(name, argv, self.logdir, env)
        if not teh.wait_for(lambda: host.addr, 60, [host], "%s to listen" % name):
            raise RuntimeError("%s did not start" % name)
        return host


def remove_segments(job):
    """The checkpoint segments the job's agents left in /dev/shm (SIGKILLed hosts remove nothing)."""
    for path in os.listdir("/dev/shm"):
        if path.startswith("shoal.%s" % job):
            try:
                os.unlink(os.path.join("/dev/shm", path))
            except OSError:
                pass


def newest_world(host):
    last = host.last()
    return last["world"] if last else 0


def step_interval_ms(hosts, world):
    gaps = []
    for h in hosts:
        ts = [d["t"] for d in h.steps() if d["world"] == world][-20:]
        gaps += [(b - a) * 1000.0 for a, b in zip(ts, ts[1:])]
    return teh.pct(gaps, 50)


def drain_once(r, hosts, n, k):
    if not teh.wait_for(lambda: all(sum(1 for d in h.steps()[-10:] if d["world"] == n) >= 5 for h in hosts), 120,
                        hosts, "the world of %d" % n):
        raise RuntimeError("no world of %d" % n)
    want_rank = 0 if k % 2 == 0 else 1
    victim = next((h for h in hosts if h.last()["rank"] == want_rank), hosts[-1])
    survivors = [h for h in hosts if h is not victim]
    baseline = step_interval_ms(hosts, n)
    before = {h.name: (h.last()["discarded"], h.last()["steps_redone"]) for h in survivors}
    t0 = time.time()
    asked = subprocess.run([r.shoal, "drain", "--control", r.control(victim.name)], capture_output=True, text=True,
                           timeout=30)
    if asked.returncode != 0:
        raise RuntimeError("shoal drain failed: %s" % asked.stderr.strip())
    if not teh.wait_for(lambda: all(h.first_good_after(t0, n - 1) for h in survivors), 60, survivors,
                        "the survivors' first step in the world of %d" % (n - 1)):
        raise RuntimeError("the survivors did not step in the world of %d" % (n - 1))
    firsts = {h.name: h.first_good_after(t0, n - 1) for h in survivors}
    try:
        exit_status = victim.proc.wait(30)
    except subprocess.TimeoutExpired:
        exit_status = None
    teh.wait_for(lambda: all(h.last()["world"] == n - 1 and h.last()["step"] >= firsts[h.name]["step"] + 2
                             for h in survivors), 30, survivors, "two more steps")
    redone = sum((h.last()["discarded"] - before[h.name][0]) + (h.last()["steps_redone"] - before[h.name][1])
                 for h in survivors)
    slowest = max(d["t"] for d in firsts.values())
    victim.kill()
    return victim, survivors, {
        "bench": "drain", "result": "drain", "drain": k, "hosts": n, "victim_rank": want_rank,
        "drain_to_step_ms": teh.ms(slowest - t0), "drain_steps_redone": redone, "drained_exit": exit_status,
        "step_ms": round(baseline, 1) if baseline is not None else None,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hosts", type=int, default=4)
    ap.add_argument("--drains", type=int, default=5)
    ap.add_argument("--step-ms", type=int, default=20)
    ap.add_argument("--wrapper", choices=("ddp", "fsdp"), default="ddp")
    ap.add_argument("--build", default=os.path.join(teh.REPO, "build"))
    ap.add_argument("--python", default="")
    ap.add_argument("--keep-logs", action="store_true")
    a = ap.parse_args()
    if a.hosts < 3 or a.drains < 1:
        ap.error("--hosts at least 3 (a drain leaves at least 2), --drains at least 1")
    teh.PY = choose_python(a)
    version = torch_of(teh.PY)
    if a.wrapper == "fsdp" and not new_enough(version):
        print(json.dumps({"bench": "drain", "result": "summary", "reason": "FSDP2 needs torch 2.6+; %s has %s" % (
            teh.PY, version)}))
        return 0
    # A SIGTERM (a timeout around the bench) still ends every host below.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    logdir = tempfile.mkdtemp(prefix="shoal-drain-bench-")
    r = Round(a, logdir)
    hosts, rows = [], []
    try:
        hosts.append(r.start(None))
        hosts += [r.start(hosts[0].addr) for _ in range(a.hosts - 1)]
        for k in range(a.drains):
            victim, survivors, row = drain_once(r, hosts, a.hosts, k)
            rows.append(row)
            print(json.dumps(row), flush=True)
            hosts = survivors + [r.start(survivors[0].addr)]
        times = [row["drain_to_step_ms"] for row in rows]
        p50 = teh.pct(times, 50)
        redone = sum(row["drain_steps_redone"] for row in rows)
        print(json.dumps({"bench": "drain", "result": "summary", "wrapper": a.wrapper, "torch": version,
                          "hosts": a.hosts, "drains": len(rows), "step_ms_target": a.step_ms,
                          "drain_to_step_p50_ms": p50, "drain_to_step_max_ms": max(times),
                          "drain_steps_redone": redone,
                          "drained_exit_nonzero": sum(1 for row in rows if row["drained_exit"] != 0),
                          "step_ms_p50": teh.pct([row["step_ms"] for row in rows if row["step_ms"] is not None], 50),
                          "target_p50_ms": TARGET_P50_MS, "met": p50 <= TARGET_P50_MS and redone == 0}), flush=True)
    finally:
        for h in hosts:
            h.kill()
        if a.keep_logs:
            teh.log("logs in %s" % logdir)
        else:
            shutil.rmtree(logdir, ignore_errors=True)
        remove_segments(r.job)
    return 0


if __name__ == "__main__":
    sys.exit(main())

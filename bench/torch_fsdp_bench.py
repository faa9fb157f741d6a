#!/usr/bin/python3
"""Kill one whole loopback host of an elastic PyTorch FSDP2 job (shoal.torch.ElasticFSDP, in place, a flash
checkpoint every step): time until every survivor's next good step, the steps lost, and whether a survivor's
process was ever restarted.

N loopback hosts run examples/python/elastic_fsdp.py (embedded agents named JOB-hK, Gloo underneath, the
model sharded with fully_shard over the view's world, rebuilt in the same process at every view change and
loaded from the newest flash checkpoint, resharded N -> M from the hosts' memory). The kill/join loop is
torch_elastic_bench.py's (its machinery imported from torch_elastic_hosts.py, torch_elastic_loop.py and
torch_elastic_shoal.py): SIGKILL every process of one host at once; kill_to_step_ms: until every survivor
printed a good step in the world of N-1 (the slowest survivor's; a step line's `t` minus the bench's wall
clock just before the SIGKILL); then a fresh host joins and join_to_step_ms runs until every host stepped in
the world of N again. Victims alternate the host of rank 0 and another.

Per kill, besides torch_elastic_bench's fields: restored_step (the step the survivors loaded), steps_lost
(the newest step every survivor printed in the world of N, minus restored_step; 0 with a checkpoint every
step unless the victim's newest shard had not reached a peer yet), bad_restores (survivors whose full
parameters right after the restore, state_checksum, differ from the checksum every survivor printed at the
restored step). The summary: kill_to_step_ms p50 and max over the kills, steps_lost, survivors_restarted
(pid changes: 0, the survivors keep their processes), and met flags against the target (p50 <= 2000 ms).

usage: torch_fsdp_bench.py [--hosts 4] [--kills 6] [--step-ms 20] [--build DIR] [--python PY] [--keep-logs]
       torch_fsdp_bench.py --find-python [--build DIR]
--python: the interpreter the hosts run (torch 2.6 or newer: FSDP2); default this one when its torch is new
enough, else the build's -Dtest_pythons (as shard_bench.py). With none, one summary line with a reason and
exit 0.
"""
import argparse
import glob
import json
import os
import shutil
import sys
import tempfile

import torch_elastic_hosts as teh  # bench/torch_elastic_hosts.py: Host, teh.PY (the interpreter the hosts run), log
from shard_bench import new_enough, torch_of  # bench/shard_bench.py: which interpreter has torch 2.6+
from torch_elastic_loop import run_system  # bench/torch_elastic_loop.py: System, the kill/join loop
from torch_elastic_shoal import Elastic  # bench/torch_elastic_shoal.py: torch_elastic_bench's elastic system

REPO = teh.REPO


class ElasticFSDP(Elastic):
    name, script = "elastic_fsdp", "elastic_fsdp.py"

    def start(self, seed):
        env = dict(os.environ, PYTHONPATH=os.path.join(self.a.build, "python"))
        agent = "%s-h%d" % (self.job, self.counter)  # an embedded agent serves /run/shoal/NAME.sock: unique
        argv = [teh.PY, os.path.join(REPO, "examples", "python", self.script), "--insecure",
                "--name", agent, "--host", agent, "--bind", "127.0.0.1:0", "--cluster", self.job, "--job", self.job,
                "--min-hosts", "2", "--steps", "100000000", "--step-ms", str(self.a.step_ms), "--ckpt-every", "1",
                "--log-level", "info"]
        return self.spawn("h", argv + (["--seeds", seed] if seed else []), env, 120)

    def after_kill(self, before, victim, survivors, firsts, t_kill):
        out = super().after_kill(before, victim, survivors, firsts, t_kill)
        # What each survivor printed at every step in the view the kill ended (its last before the SIGKILL).
        printed = []
        for h in survivors:
            lines = [d for d in h.steps() if d["t"] <= t_kill]
            view = lines[-1]["epoch"] if lines else None
            printed.append({d["step"]: d for d in lines if d["epoch"] == view and d["world"] == self.n})
        newest = min(max(p) for p in printed) if all(printed) else None  # every survivor printed it
        restored = {name: d.get("restored_step") for name, d in firsts.items()}
        steps = {s for s in restored.values()}
        step = steps.pop() if len(steps) == 1 else None
        bad = {}  # survivor: why its restore is bad
        for name, d in firsts.items():
            step_of = d.get("restored_step")
            at = [p.get(step_of) for p in printed]
            if step_of is None:
                bad[name] = "no restore"
            elif any(a is None for a in at):
                bad[name] = "step %d not printed by every survivor" % step_of
            elif any(a["checksum"] != d.get("state_checksum") for a in at):
                bad[name] = "checksum %s after the restore, %s printed at step %d" % (
                    d.get("state_checksum"), sorted({a["checksum"] for a in at}), step_of)
        out.update(restored_step=step, steps_lost=None if step is None or newest is None else max(0, newest - step),
                   bad_restores=len(bad))
        if bad:
            out["bad_restore_why"] = bad
        return out

    def summary(self, recs, s):
        kt = s["kill_to_step_ms"]
        lost = [r["steps_lost"] for r in recs]
        s["steps_lost"] = {"total": sum(x for x in lost if x is not None), "max": max(lost) if lost and None not in lost
                           else None, "unknown": lost.count(None)}
        s["bad_restores"] = sum(r["bad_restores"] for r in recs)
        s["met"] = {"kill_p50_le_2000ms": bool(recs) and kt["p50"] <= 2000,
                    "survivors_restarted_0": s["survivors_restarted"] == 0 and not s["survivors_exited"],
                    "steps_lost_0": bool(recs) and s["steps_lost"]["total"] == 0 and not s["steps_lost"]["unknown"],
                    "bad_restores_0": s["bad_restores"] == 0, "bad_steps_0": s["bad_steps"] == 0,
                    "bad_states_0": s["bad_states"] == 0}
        s["note"] = ("times from the step lines' t (the worker's wall clock) minus the bench's wall clock at the "
                     "SIGKILL; a kill's figure is its slowest survivor; steps redone after a kill are the steps lost "
                     "(a restore goes back to the newest complete checkpoint)")
        return s


def choose_python(python, build):
    if python:
        return python
    if new_enough(torch_of(sys.executable)):
        return sys.executable
    try:
        with open(os.path.join(build, "meson-info", "intro-buildoptions.json")) as f:
            options = {o["name"]: o["value"] for o in json.load(f)}
        for candidate in options.get("test_pythons", []):
            if new_enough(torch_of(candidate)):
                return candidate
    except (OSError, ValueError, KeyError):
        pass
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\nusage:")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", type=int, default=4, help="loopback hosts (default 4)")
    ap.add_argument("--kills", type=int, default=6, help="kills, alternating rank 0's host and another (default 6)")
    ap.add_argument("--step-ms", type=int, default=20, help="sleep per step, the 'compute' (default 20)")
    ap.add_argument("--build", default=os.path.join(REPO, "build"), help="shoal's build dir (default REPO/build)")
    ap.add_argument("--python", default="", help="the interpreter the hosts run (torch 2.6 or newer)")
    ap.add_argument("--keep-logs", action="store_true", help="keep the hosts' stderr logs (always kept on failure)")
    ap.add_argument("--find-python", action="store_true", help="print the interpreter the hosts would run and exit "
                    "(1 when there is none; the bench suite's smoke run skips then)")
    a = ap.parse_args()
    if a.hosts < 3 or a.kills < 0 or a.step_ms < 0:
        ap.error("--hosts takes at least 3 (min hosts 2); counts are non-negative")
    python = choose_python(a.python, a.build)
    if a.find_python:
        print(python or "no interpreter with torch 2.6 or newer (FSDP2)")
        return 0 if python else 1
    if python is None:
        print(json.dumps({"system": "elastic_fsdp", "result": "summary", "hosts": a.hosts, "kills": 0,
                          "skipped": "no interpreter with torch 2.6 or newer (FSDP2): pass --python or configure "
                          "-Dtest_pythons"}), flush=True)
        return 0
    teh.PY = python
    job = "fsbench%d" % os.getpid()
    logdir = tempfile.mkdtemp(prefix="shoal-torch-fsdp-bench-")
    teh.log("logs in %s; hosts run %s" % (logdir, python))
    sys_, failed = ElasticFSDP(a, logdir, job), True
    try:
        summary = run_system(sys_)
        summary.update(torch=torch_of(python), python=python)
        print(json.dumps(summary), flush=True)
        failed = False
    finally:
        for h in sys_.procs:
            h.kill()
        for path in glob.glob("/dev/shm/shoal.%s*" % job) + glob.glob("/run/shoal/%s*-h*.sock" % job):
            try:
                os.unlink(path)
            except OSError:
                pass
        if failed or a.keep_logs:
            teh.log("logs kept in %s" % logdir)
        else:
            shutil.rmtree(logdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

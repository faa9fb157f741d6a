"""shoal's two systems in torch_elastic_bench.py: Elastic (examples/python/elastic_ddp.py, the survivors
rebuilt in place) and Restart (`shoal agent ... -- ddp_flash.py`, the workers restarted at every view
change and loading the flash checkpoint: the loads checked against the printed checksums, the phases
after a kill read from the agents' and workers' logs).
"""
import os
import re
import subprocess
import time

import torch_elastic_hosts as teh  # teh.PY: the interpreter the hosts run, set by the bench
from torch_elastic_hosts import REPO, free_port, ms, pct
from torch_elastic_loop import System

AGENT_LOG = re.compile(r"^(\[rank \d+\] )?(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+) +\w+ +\[(\w+)\] (.*)$")
TORCH_LOG = re.compile(r"^\[rank \d+\] [IWEF](\d{8} \d\d:\d\d:\d\d)(\.\d+) +(\d+) ")
PHASES = ("suspect", "dead", "commit", "stopped", "spawned", "store_listening", "store_connected", "comm_ready",
          "restored", "load", "first_step")


class Elastic(System):
    name, restarted_key = "elastic", "survivors_restarted"

    def start(self, seed):
        env = dict(os.environ, PYTHONPATH=os.path.join(self.a.build, "python"))
        agent = "%s-h%d" % (self.job, self.counter)  # an embedded agent serves /run/shoal/NAME.sock: unique
        argv = [teh.PY, os.path.join(REPO, "examples", "python", "elastic_ddp.py"), "--insecure",
                "--name", agent, "--host", agent,
                "--bind", "127.0.0.1:0", "--cluster", self.job, "--job", self.job, "--min-hosts", "2",
                "--steps", "100000000", "--step-ms", str(self.a.step_ms), "--log-level", "info"]
        return self.spawn("h", argv + (["--seeds", seed] if seed else []), env, 60)

    def after_kill(self, before, victim, survivors, firsts, t_kill):
        return {"rebuild_ms": {name: d.get("rebuild_ms") for name, d in firsts.items()}}

    def summary(self, recs, s):
        kt = s["kill_to_step_ms"]
        s["met"] = {"kill_p50_le_1000ms": bool(recs) and kt["p50"] <= 1000, "kill_max_le_2000ms": bool(recs) and kt["max"] <= 2000,
                    "survivors_restarted_0": s["survivors_restarted"] == 0 and not s["survivors_exited"],
                    "bad_steps_0": s["bad_steps"] == 0, "bad_states_0": s["bad_states"] == 0,
                    "steps_redone_after_join_0": s["steps_redone_after_join"] == 0}
        s["note"] = ("times from the step lines' t (the worker's wall clock) minus the bench's wall clock at the "
                     "SIGKILL; a kill's figure is its slowest survivor")
        return s


def check_loads(hosts, old_pids, world, t0):
    """Each host's first event line in `world` after t0 against S, the newest step every old worker (pid
    in old_pids) printed, and the checksums they printed."""
    last, sums = {}, {}
    for h in hosts:
        mine = [d for d in h.steps() if d["pid"] == old_pids.get(h.name)]
        if h.name in old_pids:
            last[h.name] = max((d["step"] for d in mine), default=-1)
        sums.update((d["step"], d["checksum"]) for d in mine)
    common = min(last.values())
    loaded, lost, bad = {}, [], 0
    for h in hosts:
        d = h.first_event_after(t0, world)
        is_load = d is not None and d.get("event") == "load"
        loaded[h.name] = d["step"] if is_load else None
        bad += not (is_load and sums.get(d["step"]) == d["checksum"])
        if is_load:
            lost.append(common - d["step"])
    return {"common_step": common, "loaded": loaded, "steps_lost": max(lost) if lost else None, "bad_loads": bad}


def read_log(path, since):
    """(wall time, 'agent'|'worker'|'torch', tid or component, text) of a shoal agent's stderr lines."""
    out = []
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = AGENT_LOG.match(line)
            if m:
                t = time.mktime(time.strptime(m.group(2), "%Y-%m-%dT%H:%M:%S")) + float(m.group(3))
                kind, who, text = ("worker" if m.group(1) else "agent"), m.group(4), m.group(5)
            else:
                m = TORCH_LOG.match(line)
                if not m:
                    continue
                t = time.mktime(time.strptime(m.group(1), "%Y%m%d %H:%M:%S")) + float(m.group(2))
                kind, who, text = "torch", int(m.group(3)), line
            if t >= since:
                out.append((t, kind, who, text))
    return out


class Restart(System):
    name = "restart"

    def __init__(self, a, logdir, job):
        super().__init__(a, logdir, job)
        self.master_port = free_port()
        self.env = dict(os.environ, PYTHONPATH=os.path.join(a.build, "python"), TORCH_CPP_LOG_LEVEL="INFO")
        t = time.time()  # python's start and the worker's imports, on an idle machine
        subprocess.run([teh.PY, "-c", "import torch, torch.distributed, torch.nn.parallel, shoal.torch"], env=self.env,
                       check=True)
        self.extra["import_probe_ms"] = ms(time.time() - t)

    def start(self, seed):
        agent = "%s-h%d" % (self.job, self.counter)
        argv = [os.path.join(self.a.build, "shoal"), "agent", "--insecure", "--name", agent, "--host", agent,
                "--bind", "127.0.0.1:0"] + (["--seeds", seed] if seed else []) + [
                "--cluster", self.job, "--job", self.job, "--min-hosts", "2", "--hold-down", "1",
                "--master-port", str(self.master_port), "--control", os.path.join(self.logdir, agent + ".sock"),
                "--", teh.PY, os.path.join(REPO, "examples", "python", "ddp_flash.py"), "--steps", "100000000",
                "--step-ms", str(self.a.step_ms)]
        return self.spawn("h", argv, self.env, 20)

    def after_kill(self, before, victim, survivors, firsts, t_kill):
        out = check_loads(survivors, before, self.n - 1, t_kill)
        out["phases_ms"] = self.phases(victim, survivors, before, firsts, t_kill)
        return out

    def after_join(self, before, hosts, t0):
        return {"join_" + k: v for k, v in check_loads(hosts, before, self.n, t0).items()}

    def phases(self, victim, survivors, before, firsts, t_kill):
        """Milestones after the kill (ms), each the slowest survivor's."""
        dead = "member %s-%s " % (self.job, victim.name)
        worst = {}
        for h in survivors:
            old, new = before[h.name], firsts[h.name]["pid"]
            marks = {"first_step": firsts[h.name]["t"]}
            load = h.first_event_after(t_kill, self.n - 1)
            if load:
                marks["load"] = load["t"]
            for t, kind, who, text in read_log(h.log_path, t_kill - 0.002):
                spawned = "spawned" in marks
                for mark, hit in (("suspect", kind == "agent" and dead + "suspect" in text),
                                  ("dead", kind == "agent" and dead + "dead" in text),
                                  ("commit", kind == "agent" and who == "membership" and "committed" in text),
                                  ("stopped", kind == "agent" and "(pid %d, view" % old in text),
                                  ("spawned", kind == "agent" and "pid %d) for view" % new in text),
                                  ("store_listening", spawned and kind == "torch" and who == new and "listen" in text),
                                  ("store_connected", spawned and kind == "torch" and who == new and "connected" in text),
                                  ("comm_ready", spawned and kind == "worker" and who == "comm" and "ready" in text),
                                  ("restored", spawned and kind == "worker" and who == "ckpt" and "restored" in text)):
                    if hit and mark not in marks:
                        marks[mark] = t
            for mark, t in marks.items():
                worst[mark] = max(worst.get(mark, 0), ms(t - t_kill))
        return {p: worst.get(p) for p in PHASES}

    def summary(self, recs, s):
        for key in ("steps_lost", "join_steps_lost"):  # None: a kill or join with no load at all
            s[key] = max(r[key] for r in recs) if recs and None not in [r[key] for r in recs] else None
            s[key.replace("steps_lost", "bad_loads")] = sum(r[key.replace("steps_lost", "bad_loads")] for r in recs)
        s["phases_ms_p50"] = {p: pct([r["phases_ms"][p] for r in recs if r["phases_ms"][p] is not None], 50)
                              for p in PHASES}
        s["met"] = {"kill_p50_le_2000ms": bool(recs) and s["kill_to_step_ms"]["p50"] <= 2000,
                    "steps_lost_0": s["steps_lost"] is not None and s["steps_lost"] <= 0,
                    "bad_loads_0": s["bad_loads"] == 0,
                    "join_steps_lost_0": s["join_steps_lost"] is not None and s["join_steps_lost"] <= 0,
                    "join_bad_loads_0": s["join_bad_loads"] == 0}
        s["note"] = ("restart mode restarts every worker at every view change (workers_restarted counts them); "
                     "steps_lost: S minus the step loaded, S the newest step every survivor's old worker printed (-1: one "
                     "was stopped between its save and its line); "
                     "phases_ms: milestones after the SIGKILL, the slowest survivor's (see the docstring); "
                     "import_probe_ms: python3 -c 'import torch, shoal.torch' on the idle machine")
        return s

#!/usr/bin/python3
"""Kill-to-first-correct-allreduce and join-to-first-allreduce of the example trainer on loopback.

Starts N allreduce_trainer hosts (embedded agents, Gloo), waits until they train in one world of N,
then repeats: SIGKILL one host (the victim rotates through every rank position, rank 0 included),
time until every survivor has completed a correct step in the world of N-1, then start a fresh host
(a new name, so no hold-down applies) and time from its start line until every host has completed a
step in the regrown world of N. The baseline, measured in the same run, is the median step time with
no failure. One JSON line per result.

With --ckpt-every K the trainers also save their state into shoal's in-memory checkpoints every K steps
and restore after a rebuild that lost a rank, so kill-to-step includes the restore (and the checks of
restored state); a join costs no restore (the live state is handed over).

Victims alternate between rank 0's host (also the view's proposer) and another host. Besides the totals,
one line per phase of the recovery from a kill, each measured from the kill, from the trainers' own logs
(earliest survivor for the first three, last survivor for the rest): collective_failed (a communicator
aborted), suspect, dead_first, dead_all, view_committed, rebuilt (communicator ready), next_step. And
steps_redone_after_join: steps the survivors ran twice because of a join (0: nobody rolled back).

usage: bench/trainer_kill_bench.py BUILD_DIR [--hosts 4] [--kills 10] [--step-ms 20] [--ckpt-every 0]
"""
import argparse, datetime, glob, json, os, re, select, signal, statistics, subprocess, sys, tempfile, time

# The agents' log lines start with a local time stamp: 2026-11-26T04:25:07.309
STAMP = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}) ")


def log_times(path, pattern, since):
    """Times (epoch seconds) of the lines of a log that contain `pattern`, at or after `since`."""
    out = []
    try:
        with open(path, errors="replace") as f:
            for line in f:
                if pattern not in line:
                    continue
                m = STAMP.match(line)
                if not m:
                    continue
                t = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f").timestamp()
                if t >= since - 0.0005:
                    out.append(t)
    except OSError:
        pass
    return out


def recovery_phases(logs, victim, world, since):
    """When each phase of a recovery from losing `victim` happened (epoch seconds), read from the
    survivors' logs: the earliest survivor for collective_failed, suspect and dead_first, the last one
    for dead_all, view_committed (a view of `world` members) and rebuilt. A phase no log shows is absent."""
    seen = {
        "collective_failed": [min(log_times(p, "aborted (", since) or [None]) for p in logs],
        "suspect": [min(log_times(p, "member %s suspect" % victim, since) or [None]) for p in logs],
        "dead": [min(log_times(p, "member %s dead" % victim, since) or [None]) for p in logs],
        "view_committed": [min(log_times(p, "committed: %d members" % world, since) or [None]) for p in logs],
        "rebuilt": [min(log_times(p, "ready: rank", since) or [None]) for p in logs],
    }
    first = lambda xs: min([x for x in xs if x is not None], default=None)
    last = lambda xs: None if any(x is None for x in xs) else max(xs)
    out = {"collective_failed": first(seen["collective_failed"]), "suspect": first(seen["suspect"]),
           "dead_first": first(seen["dead"]), "dead_all": last(seen["dead"]),
           "view_committed": last(seen["view_committed"]), "rebuilt": last(seen["rebuilt"])}
    return {k: v for k, v in out.items() if v is not None}


def spread(values):
    """p50, p99 and max of durations in seconds, as whole milliseconds."""
    return {"p50_ms": round(pct(values, 50) * 1000), "p99_ms": round(pct(values, 99) * 1000),
            "max_ms": round(max(values) * 1000)}


def print_phases(base, result, phases):
    """One JSON line per phase with samples: p50 and p99 in milliseconds."""
    for name, values in phases.items():
        if values:
            got = spread(values)
            print(json.dumps(dict(base, result=result, phase=name, samples=len(values), p50_ms=got["p50_ms"],
                                  p99_ms=got["p99_ms"])))


def pct(values, p):
    v = sorted(values)
    if not v:
        return None
    k = min(len(v) - 1, max(0, int(round(p / 100.0 * (len(v) - 1)))))
    return v[k]


class Host:
    def __init__(self, binary, name, seed, step_ms, logdir, ckpt_every=0, job=None):
        argv = [binary, "--insecure", "--name", name, "--bind", "127.0.0.1:0", "--steps", "100000000",
                "--step-ms", str(step_ms), "--cluster", "bench", "--log-level", "info"]
        if seed:
            argv += ["--seeds", seed]
        if ckpt_every:
            # Each trainer its own host: its own segments and replica placement on this one machine.
            argv += ["--ckpt-every", str(ckpt_every), "--job", job, "--host", name]
        self.name = name
        self.log = os.path.join(logdir, name + ".log")
        self.err = open(self.log, "w")
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.err, bufsize=0)
        self.buf = b""
        self.steps = []  # (t, step, epoch, world, ok)
        self.restores = []  # (restored_step, state_ok) with --ckpt-every
        self.addr = None
        self.started = None
        while self.addr is None:
            for line in self.read(10.0):
                doc = json.loads(line)
                if doc.get("event") == "started":
                    self.addr = doc["addr"]
                    self.started = time.time()
            if self.addr is None and self.proc.poll() is not None:
                sys.exit("host %s exited before starting" % name)

    def read(self, timeout):
        lines = []
        r, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if r:
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            self.buf += chunk
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                lines.append(line.decode())
        for line in lines:
            doc = json.loads(line)
            if "step" in doc:
                self.steps.append((doc["t"], doc["step"], doc["epoch"], doc["world"], doc["ok"]))
            if "restored_step" in doc:
                self.restores.append((doc["restored_step"], doc["state_ok"]))
        return lines

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()


def pump(hosts, seconds):
    end = time.time() + seconds
    while time.time() < end:
        for h in hosts:
            h.read(0.002)


def wait_until(hosts, cond, timeout):
    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return True
        pump(hosts, 0.02)
    return cond()


def first_step_after(h, t0, world):
    for (t, step, epoch, w, ok) in h.steps:
        if t > t0 and w == world and ok:
            return t
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build_dir")
    ap.add_argument("--hosts", type=int, default=4)
    ap.add_argument("--kills", type=int, default=10)
    ap.add_argument("--step-ms", type=int, default=20)
    ap.add_argument("--ckpt-every", type=int, default=0)
    a = ap.parse_args()
    job = "killbench%d" % os.getpid()
    try:
        run(a, job)
    finally:
        # Killed trainers leave their segments behind (as a crashed host's memory would survive).
        for path in glob.glob("/dev/shm/shoal.%s*" % job):
            os.unlink(path)


def run(a, job):
    binary = os.path.join(a.build_dir, "examples", "allreduce_trainer")
    logdir = tempfile.mkdtemp(prefix="shoal-kill-bench-")
    n = a.hosts
    hosts = [Host(binary, "h%03d" % 0, None, a.step_ms, logdir, a.ckpt_every, job)]
    seed = hosts[0].addr
    for i in range(1, n):
        hosts.append(Host(binary, "h%03d" % i, seed, a.step_ms, logdir, a.ckpt_every, job))
    everyone = list(hosts)  # killed ones too: their restores count
    next_id = n
    if not wait_until(hosts, lambda: all(h.steps and h.steps[-1][3] == n for h in hosts), 60):
        sys.exit("the %d hosts never trained together (logs in %s)" % (n, logdir))
    pump(hosts, 1.0)
    # Baseline: step time with no failure, measured now.
    ts = [s[0] for s in hosts[0].steps[-20:]]
    step_s = statistics.median([b - a for a, b in zip(ts, ts[1:])])
    kill_s, join_s, bad, redone = [], [], 0, 0
    phases = {p: [] for p in ("collective_failed", "suspect", "dead_first", "dead_all", "view_committed", "rebuilt",
                              "next_step")}
    for k in range(a.kills):
        # Alternate rank 0's host (rank order is join order: hosts[0]) and another, rotating through them.
        victim = hosts[0] if k % 2 == 0 else hosts[1 + (k // 2) % (len(hosts) - 1)]
        survivors = [h for h in hosts if h is not victim]
        t_kill = time.time()
        victim.kill()
        ok = wait_until(survivors, lambda: all(first_step_after(h, t_kill, n - 1) for h in survivors), 30)
        if not ok:
            sys.exit("survivors did not resume after kill %d (logs in %s)" % (k, logdir))
        kill_s.append(max(first_step_after(h, t_kill, n - 1) for h in survivors) - t_kill)
        pump(survivors, 0.2)  # let the last log lines land
        for name, value in recovery_phases([h.log for h in survivors], victim.name, n - 1, t_kill).items():
            phases[name].append(value - t_kill)
        phases["next_step"].append(kill_s[-1])
        hosts = survivors
        before_join = {h.name: max((s[1] for s in h.steps), default=-1) for h in hosts}
        joiner = Host(binary, "h%03d" % next_id, hosts[0].addr, a.step_ms, logdir, a.ckpt_every, job)
        next_id += 1
        hosts.append(joiner)
        everyone.append(joiner)
        ok = wait_until(hosts, lambda: all(first_step_after(h, joiner.started, n) for h in hosts), 30)
        if not ok:
            sys.exit("the world did not regrow after join %d (logs in %s)" % (k, logdir))
        join_s.append(max(first_step_after(h, joiner.started, n) for h in hosts) - joiner.started)
        pump(hosts, 0.5)
        # A survivor that ran a step number again after the join rolled back.
        for h in hosts:
            if h.name in before_join:
                again = {s[1] for s in h.steps if s[0] > joiner.started and s[1] <= before_join[h.name]}
                redone += len(again)
    bad = sum(1 for h in hosts for s in h.steps if not s[4])
    restores = [r for h in everyone for r in h.restores]
    bad += sum(1 for r in restores if not r[1])
    for h in hosts:
        h.kill()
    base = {"hosts": n, "kills": a.kills, "step_ms": a.step_ms, "ckpt_every": a.ckpt_every,
            "restores": len(restores), "baseline_step_ms": round(step_s * 1000, 1), "failed_checks": bad}
    print(json.dumps(dict(base, result="kill_to_first_allreduce", **spread(kill_s))))
    print(json.dumps(dict(base, result="join_to_first_allreduce", **spread(join_s))))
    print_phases(base, "kill_phase", phases)
    print(json.dumps(dict(base, result="steps_redone_after_join", joins=a.kills, steps=redone)))


if __name__ == "__main__":
    main()

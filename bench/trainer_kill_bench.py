#!/usr/bin/python3
"""Kill-to-first-correct-allreduce and join-to-first-allreduce of the example trainer on loopback.

Starts N allreduce_trainer hosts (embedded agents, Gloo), waits until they train in one world of N,
then repeats: SIGKILL one host (the victim rotates through every rank position, rank 0 included),
time until every survivor has completed a correct step in the world of N-1, then start a fresh host
(a new name, so no hold-down applies) and time from its start line until every host has completed a
step in the regrown world of N. The baseline, measured in the same run, is the median step time with
no failure. One JSON line per result.

With --ckpt-every K the trainers also save their state into shoal's in-memory checkpoints every K steps
and restore after every rebuild, so kill-to-step includes the restore (and the checks of restored state).

usage: bench/trainer_kill_bench.py BUILD_DIR [--hosts 4] [--kills 10] [--step-ms 20] [--ckpt-every 0]
"""
import argparse, glob, json, os, select, signal, statistics, subprocess, sys, tempfile, time


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
        self.err = open(os.path.join(logdir, name + ".log"), "w")
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
    kill_s, join_s, bad = [], [], 0
    for k in range(a.kills):
        # Rotate the victim through rank positions: rank order is join order, so index k % n.
        victim = hosts[k % len(hosts)]
        survivors = [h for h in hosts if h is not victim]
        t_kill = time.time()
        victim.kill()
        ok = wait_until(survivors, lambda: all(first_step_after(h, t_kill, n - 1) for h in survivors), 30)
        if not ok:
            sys.exit("survivors did not resume after kill %d (logs in %s)" % (k, logdir))
        kill_s.append(max(first_step_after(h, t_kill, n - 1) for h in survivors) - t_kill)
        hosts = survivors
        joiner = Host(binary, "h%03d" % next_id, hosts[0].addr, a.step_ms, logdir, a.ckpt_every, job)
        next_id += 1
        hosts.append(joiner)
        everyone.append(joiner)
        ok = wait_until(hosts, lambda: all(first_step_after(h, joiner.started, n) for h in hosts), 30)
        if not ok:
            sys.exit("the world did not regrow after join %d (logs in %s)" % (k, logdir))
        join_s.append(max(first_step_after(h, joiner.started, n) for h in hosts) - joiner.started)
        pump(hosts, 0.5)
    bad = sum(1 for h in hosts for s in h.steps if not s[4])
    restores = [r for h in everyone for r in h.restores]
    bad += sum(1 for r in restores if not r[1])
    for h in hosts:
        h.kill()
    base = {"hosts": n, "kills": a.kills, "step_ms": a.step_ms, "ckpt_every": a.ckpt_every,
            "restores": len(restores), "baseline_step_ms": round(step_s * 1000, 1), "failed_checks": bad}
    print(json.dumps(dict(base, result="kill_to_first_allreduce", p50_ms=round(pct(kill_s, 50) * 1000),
                          p99_ms=round(pct(kill_s, 99) * 1000), max_ms=round(max(kill_s) * 1000))))
    print(json.dumps(dict(base, result="join_to_first_allreduce", p50_ms=round(pct(join_s, 50) * 1000),
                          p99_ms=round(pct(join_s, 99) * 1000), max_ms=round(max(join_s) * 1000))))


if __name__ == "__main__":
    main()

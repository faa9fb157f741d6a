"""The hosts of torch_elastic_bench.py (and torch_fsdp_bench.py): one loopback host is a process in a session
of its own (Host: its stdout's step and event lines read on a thread, its whole process tree SIGKILLed at
once), waiting on them with a deadline, and the small figures the bench prints (pct, stats, ms). PY is the
interpreter every worker and agent runs: the bench sets it from --python before it starts a host.
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

PY = "/usr/bin/python3"
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LISTENING = re.compile(r"^shoal agent (\S+) listening on (\S+)")


def log(msg):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr, flush=True)


def pct(values, p):
    v = sorted(values)
    if not v:
        return None
    return v[min(len(v) - 1, max(0, int(round(p / 100.0 * (len(v) - 1)))))]


def ms(seconds):
    return None if seconds is None else round(seconds * 1000.0)


def stats(values):
    values = [v for v in values if v is not None]
    return {"p50": pct(values, 50), "max": max(values) if values else None}


def host_pids(root):
    """root, every process of its session (the agent's workers have groups of their own) and every
    descendant of it (torchrun's workers)."""
    procs = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    rest = f.read().rsplit(")", 1)[1].split()
                procs[int(entry)] = (int(rest[1]), int(rest[3]))  # ppid, session
            except (OSError, IndexError, ValueError):
                pass
    out = {root} | {p for p, (_, sid) in procs.items() if sid == root}
    while True:
        more = {p for p, (ppid, _) in procs.items() if ppid in out} - out
        if not more:
            return out
        out |= more


class Host:
    """One loopback host: a process in a session of its own; its stdout read on a thread (a worker's line
    may carry the agent's `[rank N] ` prefix), the step lines kept as (arrival wall time, doc), the event
    lines (load, fresh) as docs; its stderr in LOGDIR/NAME.log."""

    def __init__(self, name, argv, logdir, env=None):
        self.name = name
        self.log_path = os.path.join(logdir, name + ".log")
        self.err = open(self.log_path, "w")
        self.spawned = time.time()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.err, stdin=subprocess.DEVNULL,
                                     start_new_session=True, env=env)
        self.lines, self.events, self.lock = [], [], threading.Lock()
        self.started, self.addr = None, None
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for raw in self.proc.stdout:
            now = time.time()
            text = raw.decode(errors="replace").strip()
            m = LISTENING.match(text)
            if m:  # shoal agent: its listening line
                self.started, self.addr = now, m.group(2)
                continue
            try:
                doc = json.loads(text[text.index("{"):])
            except ValueError:  # no JSON object (no "{" raises ValueError too)
                continue
            with self.lock:
                if not isinstance(doc, dict):
                    pass
                elif doc.get("event") == "started":
                    self.started, self.addr = now, doc.get("addr")
                elif "event" in doc:
                    self.events.append(doc)
                elif "step" in doc:
                    self.lines.append((now, doc))

    def steps(self):
        with self.lock:
            return [d for _, d in self.lines]

    def last(self):
        with self.lock:
            return self.lines[-1][1] if self.lines else None

    def first_good_after(self, t0, world):
        return next((d for d in self.steps() if d["t"] > t0 and d["world"] == world and d.get("ok", True)), None)

    def first_event_after(self, t0, world):
        with self.lock:
            return next((d for d in self.events if d["t"] > t0 and d["world"] == world), None)

    def alive(self):
        return self.proc.poll() is None

    def kill(self):
        """SIGKILLs the whole host at once; returns the wall clock just before the first signal."""
        if self.proc.poll() is not None:  # its pid may be another process's now
            return time.time()
        pids, t = host_pids(self.proc.pid), time.time()
        for _ in range(2):  # again for anything the first pass missed
            for pid in sorted(pids, key=lambda p: p != self.proc.pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            pids = host_pids(self.proc.pid) - {self.proc.pid}
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            pass
        return t


def wait_for(cond, timeout, hosts=(), what=""):
    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return True
        for h in hosts:
            if not h.alive():
                raise RuntimeError("host %s exited (rc %s) while waiting for %s" % (h.name, h.proc.returncode, what))
        time.sleep(0.01)
    return cond()


def all_stepped(hosts, t0, world):
    return all(h.first_good_after(t0, world) for h in hosts)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

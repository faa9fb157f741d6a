"""Real `shoal agent` processes on loopback that run workers, for the python suite: their output lines
are read on threads of their own and kept with the time each arrived."""
import json
import os
import random
import re
import signal
import socket
import subprocess
import threading
import time

from conftest import BUILD, PYTHON, child_env

SHOAL = os.path.join(BUILD, "shoal")
WORKER_LINE = re.compile(r"^\[rank (\d+)\] (\{.*\})$")


def _unassigned_spans():
    """The port ranges the kernel never hands out on its own (below and above ip_local_port_range)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(x) for x in f.read().split())
    except (OSError, ValueError):
        low, high = 32768, 60999
    spans = [(a, b) for a, b in ((10000, low), (high + 1, 65536)) if b - a >= 1000]
    return spans or [(10000, 65536)]


def free_ports(n):
    """n consecutive ports that are free for TCP and UDP now (the agent binds both). Outside the kernel's
    ephemeral range: a port it assigned (bind to 0) goes back to the pool that every outgoing connection draws
    from, and the agents' and Gloo's own connections took one before the test started the agent meant for it
    ("port ... is already in use", python_elastic, once). Chosen at random, so that tests running side by side
    rarely try the same ones."""
    rng = random.Random(os.getpid() ^ time.monotonic_ns())
    spans = _unassigned_spans()
    for _ in range(200):
        low, high = rng.choice(spans)
        if high - low <= n:
            continue
        base = rng.randrange(low, high - n)
        ok = True
        for p in range(base, base + n):
            for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
                with socket.socket(socket.AF_INET, kind) as s:
                    try:
                        s.bind(("127.0.0.1", p))
                    except OSError:
                        ok = False
        if ok:
            return list(range(base, base + n))
    raise RuntimeError("no free ports")


class _Host:
    """A process started in a session of its own (so that a SIGKILL of its group takes everything it
    started with it) whose stdout lines are kept, with the time each arrived, by a thread."""

    def __init__(self, argv, env, stderr):
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=stderr, env=env, start_new_session=True)
        self.lines = []  # (arrival, text)
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for raw in self.proc.stdout:
            with self.lock:
                self.lines.append((time.monotonic(), raw.decode(errors="replace").rstrip("\n")))

    def _lines(self):
        with self.lock:
            return list(self.lines)

    def kill(self):
        """SIGKILL of the whole host."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait(10)

    stop = kill


class Agent(_Host):
    """One host: `shoal agent` with a worker command; its workers' JSON lines through docs()."""

    def __init__(self, name, port, seed_port, job, command, control_dir, extra=(), env=None):
        self.name = name
        self.control = os.path.join(control_dir, name + ".sock")
        argv = [SHOAL, "agent", "--name", name, "--host", name, "--bind", "127.0.0.1:%d" % port,
                "--cluster", job, "--job", job, "--control", self.control] + list(extra)
        if "--key-file" not in extra:
            argv.append("--insecure")  # loopback only
        if seed_port:
            argv += ["--seeds", "127.0.0.1:%d" % seed_port]
        super().__init__(argv + ["--"] + list(command), env or child_env(SHOAL_LOG="info"), subprocess.STDOUT)

    def docs(self, since=0.0):
        """The workers' JSON lines as (time, rank, doc)."""
        out = []
        for t, text in self._lines():
            m = WORKER_LINE.match(text)
            if m and t >= since:
                try:
                    out.append((t, int(m.group(1)), json.loads(m.group(2))))
                except ValueError:
                    pass
        return out

    def text(self):
        return "\n".join(l for _, l in self._lines())


class Trainer(_Host):
    """One host as an embedded-agent trainer (examples/python/elastic_ddp.py or a test script with the
    same flags); its stdout JSON lines with their arrival time, stderr in a file."""

    def __init__(self, script, name, port, seed_addr, job, log_dir, extra=(), env=None):
        self.name = name
        argv = [PYTHON, script, "--name", name, "--host", name, "--bind", "127.0.0.1:%d" % port,
                "--cluster", job, "--job", job] + list(extra)
        if "--key-file" not in extra:
            argv.append("--insecure")  # loopback only
        if seed_addr:
            argv += ["--seeds", seed_addr]
        self.err_path = os.path.join(log_dir, name + ".err")
        self.err = open(self.err_path, "w")
        super().__init__(argv, env or child_env(), self.err)

    def docs(self):
        out = []
        for t, text in self._lines():
            try:
                out.append((t, json.loads(text)))
            except ValueError:
                pass
        return out

    def steps(self):
        return [d for _, d in self.docs() if "step" in d]

    def addr(self):
        for _, d in self.docs():
            if d.get("event") == "started":
                return d["addr"]
        return None

    def stderr_text(self):
        self.err.flush()
        with open(self.err_path) as f:
            return f.read()

    def stop(self):
        self.kill()
        self.err.close()

"""The processes and sessions of torch_ckpt_bench.py: a worker process (Child: torch_ckpt_bench.py --worker,
JSON lines on its stdout), an embedded session on loopback (start_session), a free loopback port, and the
removal of the shared-memory segments a run (or an earlier, dead run) leaves.
"""
import contextlib
import ctypes
import glob
import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time

import shoal

from torch_ckpt_report import emit

JOB_PREFIX = "torchckptbench"
BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_ckpt_bench.py")  # its --worker mode


class Child:
    """A worker process running torch_ckpt_bench.py with --worker; JSON lines on its stdout, stderr to a log."""
    running = []

    def __init__(self, spec, logdir, name):
        self.name = name
        self.log = os.path.join(logdir, name + ".log")
        libc = ctypes.CDLL(None, use_errno=True)
        self.proc = subprocess.Popen(
            [sys.executable, BENCH, "--worker", json.dumps(spec)], stdout=subprocess.PIPE,
            stderr=open(self.log, "w"), preexec_fn=lambda: libc.prctl(1, signal.SIGKILL))  # dies with us
        Child.running.append(self)
        self.buf = b""

    def line(self, timeout):
        """The next JSON line it prints; RuntimeError naming its log when it exits or times out first."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError("%s printed nothing within %.0f s (log: %s)" % (self.name, timeout, self.log))
            r, _, _ = select.select([self.proc.stdout], [], [], min(left, 1.0))
            if r:
                chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
                if not chunk:
                    self.proc.wait()
                    raise RuntimeError("%s exited %s: %s" % (self.name, self.proc.returncode, self.tail()))
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def tail(self):
        with open(self.log, errors="replace") as f:
            return "".join(f.readlines()[-15:])

    def finish(self, timeout=60):
        self.proc.wait(timeout=timeout)
        if self.proc.returncode != 0:
            raise RuntimeError("%s exited %d: %s" % (self.name, self.proc.returncode, self.tail()))

    @classmethod
    def kill_all(cls):
        for c in cls.running:
            if c.proc.poll() is None:
                c.proc.kill()
                c.proc.wait()
        cls.running = []


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_session(job, host, replicas, seed, min_hosts, announce=False):
    """An embedded session on loopback; announce prints its address (for the other host) before it waits
    for a view of min_hosts."""
    s = shoal.Session.start(
        insecure=True, name=host, host=host, bind="127.0.0.1:0", control_path="none", cluster=job, job=job,
        log_spec="warn", ckpt_replicas=replicas, seeds=[seed] if seed else [], min_hosts=min_hosts)
    if announce:
        emit({"addr": s.address})
    s.wait_for_view(0, 60.0)
    return s


def remove_segments(pattern):
    for path in glob.glob("/dev/shm/" + pattern):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def remove_stale_segments():
    """Segments and files of earlier runs of this bench whose process is gone."""
    for path in glob.glob("/dev/shm/*%s*" % JOB_PREFIX):
        m = re.search(JOB_PREFIX + r"(\d+)", path)
        if not m:
            continue
        try:
            os.kill(int(m.group(1)), 0)
        except ProcessLookupError:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        except PermissionError:
            pass

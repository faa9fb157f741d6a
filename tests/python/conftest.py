"""Fixtures of the python suite: unique job names whose shared memory is removed afterwards, embedded
sessions on loopback, and child processes running this build's shoal package."""
import glob
import itertools
import json
import os
import subprocess
import sys
import time

import pytest

BUILD = os.environ.get("SHOAL_BUILD_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
# The interpreter this suite runs under (meson runs it once under Debian's python3 with its torch, once in a
# virtual environment with torch from PyPI): children run under the same one.
PYTHON = sys.executable
_counter = itertools.count()


def child_env(**extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(BUILD, "python")
    env.setdefault("SHOAL_LOG", "warn")
    env.update({k: str(v) for k, v in extra.items()})
    return env


def remove_segments(job):
    for path in glob.glob("/dev/shm/shoal.%s*" % job):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


@pytest.fixture
def job():
    """A job name no other test uses; its segments in /dev/shm are removed before and after."""
    name = "pyt%dx%d" % (os.getpid(), next(_counter))
    remove_segments(name)
    yield name
    remove_segments(name)


@pytest.fixture
def session(job):
    """An embedded single-host session on loopback, left at the end."""
    import shoal
    s = shoal.Session.start(insecure=True, name="solo", bind="127.0.0.1:0", control_path="none", cluster=job, job=job,
                            log_spec="warn")
    s.wait_for_view(0, 30.0)
    yield s
    s.leave()


def run_child(code, *args, timeout=120, env=None, check=True, prefix=()):
    """Runs `code` (a script's text) under Debian's python3 with this build's package; returns the
    JSON lines it printed, as dicts."""
    proc = subprocess.run(list(prefix) + [PYTHON, "-c", code] + [str(a) for a in args], env=env or child_env(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError("child exited %d\nstdout:\n%s\nstderr:\n%s" % (
            proc.returncode, proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace")))
    return proc, [json.loads(l) for l in proc.stdout.decode().splitlines() if l.startswith("{")]


def wait_for(predicate, timeout, what, interval=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = predicate()
        if got:
            return got
        time.sleep(interval)
    raise AssertionError("timed out after %.0f s waiting for %s" % (timeout, what))


def run_pair(code, first_args, second_args, timeout=60):
    """Two hosts of one job, each running `code`: the first with first_args, which must print
    {"addr": ...} as its first line; then the second with second_args, where "{addr}" stands for that
    address. Returns the JSON lines of both (the first's address line included), after both exited 0."""
    env = child_env()
    first = subprocess.Popen([PYTHON, "-c", code] + [str(a) for a in first_args], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    try:
        addr = json.loads(first.stdout.readline())["addr"]
        _, second = run_child(code, *[addr if a == "{addr}" else a for a in second_args], env=env, timeout=timeout)
        out, err = first.communicate(timeout=timeout)
        assert first.returncode == 0, err.decode()
    finally:
        if first.poll() is None:
            first.kill()
    return [{"addr": addr}] + [json.loads(l) for l in out.decode().splitlines() if l.startswith("{")], second

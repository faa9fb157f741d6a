"""A deadline for missing hosts, with real agents on loopback: --wait-hosts T ends every agent of a job whose
--min-hosts never come (exit 1, the reason in its log), so that a scheduler can requeue it; --want-hosts N
--min-hosts M --wait-hosts T hands the first view to the workers once it holds N members, or after T with at
least M; and the flags' bad values are refused with the value named."""
import subprocess
import time

from agents import SHOAL, Agent, free_ports
from conftest import PYTHON, wait_for
from test_drain import cluster, once

# A worker that says which world it was started for, and when.
WORLD_WORKER = [PYTHON, "-c", "import json, os, time; print(json.dumps({'world': int(os.environ['WORLD_SIZE']), "
                "'t': time.monotonic()}), flush=True); time.sleep(120)"]


@once
def test_a_job_whose_min_hosts_never_come_exits_nonzero_after_wait_hosts(job, tmp_path):
    ports = free_ports(2)
    flags = ["--min-hosts", "3", "--wait-hosts", "2"]
    started = time.monotonic()
    first = Agent("h0", ports[0], None, job, [], str(tmp_path), flags)
    agents = [first, Agent("h1", ports[1], ports[0], job, [], str(tmp_path), flags)]  # the third never starts
    with cluster(agents):
        for a in agents:
            assert a.proc.wait(15) == 1, "%s gives up with exit 1" % a.name
        assert time.monotonic() - started < 2 + 8
        for a in agents:
            assert "no committed view after --wait-hosts 2.0 s" in a.text() and "--min-hosts 3" in a.text(), a.text()


@once
def test_want_hosts_hands_a_view_of_min_hosts_on_once_wait_hosts_passed(job, tmp_path):
    ports = free_ports(2)
    flags = ["--min-hosts", "2", "--want-hosts", "3", "--wait-hosts", "3"]
    started = time.monotonic()
    first = Agent("h0", ports[0], None, job, WORLD_WORKER, str(tmp_path), flags)
    agents = [first, Agent("h1", ports[1], ports[0], job, WORLD_WORKER, str(tmp_path), flags)]
    with cluster(agents):
        docs = wait_for(lambda: all(a.docs() for a in agents) and [a.docs()[0][2] for a in agents], 20,
                        "the workers of a view of 2")
        assert all(d["world"] == 2 for d in docs), docs
        assert all(d["t"] - started >= 3 - 0.2 for d in docs), ("handed on before --wait-hosts", docs, started)
        assert all(a.proc.poll() is None for a in agents)


@once
def test_wait_hosts_and_want_hosts_refuse_bad_values():
    for flags, named in ((["--wait-hosts", "-1"], "-1"), (["--min-hosts", "3", "--want-hosts", "2", "--wait-hosts", "5"],
                                                        "--want-hosts 2 is below --min-hosts 3"),
                         (["--want-hosts", "3"], "--want-hosts needs --wait-hosts")):
        r = subprocess.run([SHOAL, "agent", "--name", "x", "--bind", "127.0.0.1:0", "--insecure"] + flags,
                           capture_output=True, text=True, timeout=10)
        assert r.returncode == 2 and named in r.stderr, (flags, r.stderr)

"""`shoal drain` with real agents on loopback, their trainers connected (`shoal agent --workers connect --
examples/python/elastic_ddp.py or elastic_fsdp.py`, or the C++ example trainer), by `shoal drain` or by
SIGTERM with --drain-on-sigterm: the drained host's trainers finish their step, save, wait
until a peer holds that version and end; the host leaves at that step boundary and its agent exits 0; the
survivors discard nothing, redo nothing and go on from the next step in the smaller world. Also what a drain
refuses (the last member, an agent that is not there, a negative deadline), and the watcher of the clouds'
preemption notices, pointed at a local server that answers as the metadata services do."""
import contextlib
import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
import torch

from agents import SHOAL, Agent, free_ports
from conftest import BUILD, PYTHON, wait_for

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "..", "examples", "python")
TORCH = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])
# What uses no torch runs once, under the suite's first interpreter (Debian's python3), not again under each of
# -Dtest_pythons (virtual environments).
once = pytest.mark.skipif(sys.prefix != sys.base_prefix, reason="uses no torch: runs outside virtual environments only")


def steps(agent, world=None):
    return [d for _, _, d in agent.docs() if "step" in d and (world is None or d["world"] == world)]


def ends(agent):
    return [d for _, _, d in agent.docs() if d.get("event") in ("drained", "done")]


@contextlib.contextmanager
def cluster(agents):
    """Kills every agent at the end; on a failure first prints the tail of each one's output."""
    try:
        yield agents
    except BaseException:
        for a in agents:
            print("==== %s (exit %s)\n%s" % (a.name, a.proc.poll(), a.text()[-5000:]))
        raise
    finally:
        for a in agents:
            a.kill()


def start(job, tmp_path, n, command_of, extra=()):
    """n agents h0..h{n-1}; command_of(control socket) is the workers' command of each."""
    ports = free_ports(n)
    flags = ["--min-hosts", "2", "--workers", "connect"] + list(extra)
    out = []
    for i in range(n):
        control = os.path.join(str(tmp_path), "h%d.sock" % i)
        out.append(Agent("h%d" % i, ports[i], ports[0] if i else None, job, command_of(control), str(tmp_path), flags))
    return out


def worker_command(wrapper, step_ms=20):
    """The connected trainer of each host: elastic_ddp.py (a checkpointer whose only save is the drain's),
    elastic_fsdp.py (a flash checkpoint every step, its default) or the C++ example trainer (ElasticLoop)."""
    if wrapper == "cpp":
        trainer = os.path.join(BUILD, "examples", "allreduce_trainer")
        return lambda control: [trainer, "--control", control, "--steps", "1000000", "--step-ms", str(step_ms),
                                "--ckpt-every", "1000000"]
    script = os.path.join(EXAMPLES, "elastic_ddp.py" if wrapper == "ddp" else "elastic_fsdp.py")
    every = "1000000" if wrapper == "ddp" else "1"
    return lambda control: [PYTHON, script, "--steps", "1000000", "--step-ms", "20", "--ckpt-every", every]


@pytest.mark.parametrize("wrapper,how", [("ddp", "drain"), ("fsdp", "drain"), pytest.param("cpp", "drain", marks=once),
                                         pytest.param("cpp", "sigterm", marks=once)])
def test_a_drained_host_leaves_at_a_step_boundary_and_the_survivors_redo_nothing(job, tmp_path, wrapper, how):
    if wrapper == "fsdp" and TORCH < (2, 6):
        pytest.skip("FSDP2 (fully_shard) on CPU and Gloo needs torch 2.6 or newer")
    agents = start(job, tmp_path, 3, worker_command(wrapper), ["--drain-on-sigterm"] if how == "sigterm" else [])
    with cluster(agents):
        wait_for(lambda: all(len(steps(a, 3)) >= 5 for a in agents), 90, "three hosts training together")
        # DDP: the host of rank 0 drains (the survivors' new rank 0 hands nothing out: they hold the same state).
        victim = next(a for a in agents if any(d["rank"] == (0 if wrapper == "ddp" else 1) for d in steps(a, 3)))
        survivors = [a for a in agents if a is not victim]
        if how == "sigterm":
            victim.proc.send_signal(signal.SIGTERM)  # the agent alone, as systemd's KillMode=mixed or scancel
        else:
            drained = subprocess.run([SHOAL, "drain", "--control", victim.control], capture_output=True, text=True,
                                     timeout=20)
            assert drained.returncode == 0, drained.stderr
            assert "draining" in drained.stdout
        assert victim.proc.wait(30) == 0, "the drained agent exits 0"
        end = wait_for(lambda: ends(victim), 5, "the drained trainer's last line")[0]
        assert end["event"] == "drained", end
        if wrapper != "cpp":
            assert end["safe"], ("a peer holds the drained host's last step", end)
        last = end["last_step"]
        assert steps(victim)[-1]["step"] == last
        # World 2 after the world of 3 (a first view of two, before the third host joined, is no "after").
        def after_drain(a):
            before = steps(a, 3)
            return [d for d in steps(a, 2) if before and d["epoch"] > before[-1]["epoch"]]
        wait_for(lambda: all(len(after_drain(a)) >= 3 for a in survivors), 60, "the survivors training in a world of 2")
        for a in survivors:
            before, after = steps(a, 3), after_drain(a)
            assert before[-1]["step"] == last, ("the survivors stopped at the drained step", a.name, before[-1])
            assert after[0]["step"] == last + 1, ("the survivors go on from the next step", a.name, after[0])
            assert all(d["ok"] and d.get("state_ok", True) for d in before + after)
            numbers = [d["step"] for d in before + after]
            assert numbers == sorted(set(numbers)), ("a step printed twice: redone", a.name)
            if wrapper != "cpp":
                assert all(d["discarded"] == 0 and d["steps_redone"] == 0 for d in before + after), (a.name, after[:3])
            if wrapper != "ddp":  # FSDP and ElasticLoop restore after a loss: the drained step itself
                assert after[0].get("restored_step") == last, ("the drained step is restored", after[0])
        assert "drain: every rank of this host is done" in victim.text()


@once
def test_two_hosts_drained_together_leave_and_the_survivors_go_on_once_both_are_out(job, tmp_path):
    # Steps of 200 ms: both requests land between the same two steps.
    agents = start(job, tmp_path, 4, worker_command("cpp", step_ms=200))
    with cluster(agents):
        wait_for(lambda: all(len(steps(a, 4)) >= 2 for a in agents), 90, "four hosts training together")
        victims, survivors = agents[2:], agents[:2]
        asks = [subprocess.Popen([SHOAL, "drain", "--control", v.control], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE) for v in victims]
        assert all(p.wait(20) == 0 for p in asks)
        for v in victims:
            assert v.proc.wait(30) == 0
        lasts = {wait_for(lambda: ends(v), 5, "a drained line")[0]["last_step"] for v in victims}
        assert len(lasts) == 1, ("both hosts drained at one step boundary", lasts)
        (last,) = lasts
        wait_for(lambda: all(len([d for d in steps(a, 2) if d["epoch"] > steps(a, 4)[-1]["epoch"]]) >= 3
                             for a in survivors), 60, "the survivors in a world of 2")
        for a in survivors:
            four = steps(a, 4)
            assert four[-1]["step"] == last
            # A world of 3 after the world of 4 would be one host out and the other still in (a first view of
            # three, before the fourth host joined, is no "after": hosts start one by one).
            assert not [d for d in steps(a, 3) if d["epoch"] > four[-1]["epoch"]], \
                ("the survivors waited for both hosts to be out", a.name)
            after = [d for d in steps(a, 2) if d["epoch"] > four[-1]["epoch"]]
            assert after[0]["step"] == last + 1 and after[0].get("restored_step") == last, after[0]


@once
def test_a_drain_is_refused_for_the_last_member_and_an_agent_that_is_not_there(job, tmp_path):
    (port,) = free_ports(1)
    solo = Agent("solo", port, None, job, [], str(tmp_path), ["--min-hosts", "1"])
    with cluster([solo]):
        def in_view():
            r = subprocess.run([SHOAL, "view", "--json", "--control", solo.control], capture_output=True, text=True)
            return r.returncode == 0 and json.loads(r.stdout).get("epoch", 0) >= 1
        wait_for(in_view, 30, "the first view")
        last = subprocess.run([SHOAL, "drain", "--control", solo.control], capture_output=True, text=True, timeout=10)
        assert last.returncode == 1 and "last member" in last.stderr, last.stderr
        assert solo.proc.poll() is None, "a refused drain changes nothing"
        missing = subprocess.run([SHOAL, "drain", "--control", str(tmp_path / "nosuch.sock")], capture_output=True,
                                 text=True, timeout=10)
        assert missing.returncode == 1 and "nosuch.sock" in missing.stderr, missing.stderr
        negative = subprocess.run([SHOAL, "drain", "--control", solo.control, "--within", "-1"], capture_output=True,
                                  text=True, timeout=10)
        assert negative.returncode == 2 and "-1" in negative.stderr, negative.stderr
        assert solo.proc.poll() is None


class Notices(http.server.ThreadingHTTPServer):
    """The metadata services' notice endpoints on 127.0.0.1, as documented: AWS (an IMDSv2 token, then 404
    until a notice), GCP (instance/preempted: FALSE, then TRUE), Azure (Scheduled Events, then a Preempt)."""

    def __init__(self):
        self.notice = False
        self.seen = []  # (method, path, headers)
        super().__init__(("127.0.0.1", 0), NoticeHandler)


class NoticeHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, body):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_PUT(self):
        self.server.seen.append(("PUT", self.path, dict(self.headers)))
        if self.path == "/latest/api/token" and "X-aws-ec2-metadata-token-ttl-seconds" in self.headers:
            return self.answer(200, "token-1")
        self.answer(400, "")

    def do_GET(self):
        self.server.seen.append(("GET", self.path, dict(self.headers)))
        notice = self.server.notice
        if self.path == "/latest/meta-data/spot/instance-action":
            if self.headers.get("X-aws-ec2-metadata-token") != "token-1":
                return self.answer(401, "")
            return self.answer(200, json.dumps({"action": "terminate", "time": "2026-12-02T03:00:00Z"})) if notice \
                else self.answer(404, "Not Found")
        if self.path == "/computeMetadata/v1/instance/preempted" and self.headers.get("Metadata-Flavor") == "Google":
            return self.answer(200, "TRUE" if notice else "FALSE")
        if self.path == "/metadata/scheduledevents?api-version=2020-07-01" and self.headers.get("Metadata") == "true":
            events = [{"EventId": "E1", "EventType": "Preempt", "ResourceType": "VirtualMachine"}] if notice else []
            return self.answer(200, json.dumps({"DocumentIncarnation": 1, "Events": events}))
        self.answer(404, "")


@once
@pytest.mark.parametrize("cloud", ["aws", "gcp", "azure"])
def test_a_preemption_notice_drains_the_host(job, tmp_path, cloud):
    server = Notices()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:%d" % server.server_address[1]
    ports = free_ports(2)
    first = Agent("h0", ports[0], None, job, [], str(tmp_path), ["--min-hosts", "1"])
    # A witness (no ranks): its drain has no trainer to wait for.
    spot = Agent("h1", ports[1], ports[0], job, [], str(tmp_path),
                 ["--min-hosts", "1", "--slots", "0", "--drain-on", cloud, "--drain-notice-url", url])
    try:
        with cluster([first, spot]):
            def two_in_view():
                r = subprocess.run([SHOAL, "view", "--json", "--control", first.control], capture_output=True, text=True)
                return r.returncode == 0 and len(json.loads(r.stdout).get("members", [])) == 2
            wait_for(two_in_view, 30, "a view of both hosts")
            wait_for(lambda: len(server.seen) >= 2, 10, "the watcher's first polls")
            assert spot.proc.poll() is None, "no notice, no drain"
            server.notice = True
            assert spot.proc.wait(15) == 0, "the noticed host drained and exited 0"
            assert "drain:" in spot.text()
            if cloud == "aws":
                assert any(m == "PUT" and p == "/latest/api/token" for m, p, _ in server.seen)
    finally:
        server.shutdown()
        server.server_close()

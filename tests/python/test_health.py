"""Node health for Python loops (shoal.HealthMonitor, which shoal.torch.Elastic(health=...) uses): three
embedded hosts on loopback time their steps, exchange the figures on the job's communicator and judge
alike. One whose steps take 40% longer is named by every host, and its agent is told (`shoal health`);
with equal steps nobody is named."""
import json
import os
import subprocess
import tempfile

from agents import SHOAL, free_ports
from conftest import PYTHON, child_env

CHILD = r"""
import array, json, subprocess, sys, time
import shoal
name, port, seed, step_ms, control, job, shoal_bin = sys.argv[1:8]
s = shoal.Session.start(insecure=True, name=name, host=name, bind="127.0.0.1:" + port,
                        seeds=[seed] if seed != "-" else [], min_hosts=3, control_path=control, cluster=job,
                        job=job, log_spec="warn")
comm = s.communicator()
assert comm.world_size == 3, comm.world_size
monitor = shoal.HealthMonitor(s, exchange_every=5)
grads = array.array("f", [1.0] * 1024)
for step in range(45):
    monitor.step_began(comm)
    time.sleep(int(step_ms) / 1000.0)          # compute
    comm.allreduce(grads, "sum")              # wait: the others' compute shows up here
    monitor.step_ended(comm)
    monitor.completed(comm, step)
health = monitor.health()
agent = subprocess.run([shoal_bin, "health", "--control", control, "--json"], stdout=subprocess.PIPE, timeout=10)
print(json.dumps({"name": name, "health": health, "agent": json.loads(agent.stdout)}), flush=True)
comm.barrier()
s.leave()
"""

# The same with shoal.torch.Elastic(health=...): DDP's gradient allreduce is the wait.
ELASTIC_CHILD = r"""
import json, subprocess, sys, time
import torch
import shoal, shoal.torch
name, port, seed, step_ms, control, job, shoal_bin = sys.argv[1:8]
s = shoal.Session.start(insecure=True, name=name, host=name, bind="127.0.0.1:" + port,
                        seeds=[seed] if seed != "-" else [], min_hosts=3, control_path=control, cluster=job,
                        job=job, log_spec="warn")
torch.manual_seed(0)
model = torch.nn.Linear(16, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
job_ = shoal.torch.Elastic(s, model, opt, health={"exchange_every": 5})
x = torch.ones(8, 16)
while job_.next_step < 45:
    with job_.step():
        time.sleep(int(step_ms) / 1000.0)
        job_.model(x).sum().backward()
        opt.step()
        opt.zero_grad()
health = job_.health()
agent = subprocess.run([shoal_bin, "health", "--control", control, "--json"], stdout=subprocess.PIPE, timeout=10)
print(json.dumps({"name": name, "health": health, "agent": json.loads(agent.stdout)}), flush=True)
job_.comm.barrier()
job_.close()
s.leave()
"""


def run_three(job, slow, child=CHILD):
    ports = free_ports(3)
    names = ["p0", "p1", "p2"]
    with tempfile.TemporaryDirectory() as d:
        procs = []
        try:
            for i, n in enumerate(names):
                seed = "-" if i == 0 else "127.0.0.1:%d" % ports[0]
                step_ms = 70 if n == slow else 50
                procs.append(subprocess.Popen(
                    [PYTHON, "-c", child, n, str(ports[i]), seed, str(step_ms), os.path.join(d, n + ".sock"), job,
                     SHOAL], env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE))
            docs = {}
            for n, p in zip(names, procs):
                out, err = p.communicate(timeout=60)
                assert p.returncode == 0, "%s exited %d:\n%s" % (n, p.returncode, err.decode(errors="replace"))
                doc = json.loads([l for l in out.decode().splitlines() if l.startswith("{")][-1])
                docs[doc["name"]] = doc
            return docs
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()


def test_a_host_whose_steps_take_longer_is_named_by_every_host_and_its_agent_is_told(job):
    docs = run_three(job, "p1")
    for n, doc in docs.items():
        h = doc["health"]
        assert h["stragglers"] == ["p1"], (n, h)
        assert [x["name"] for x in h["hosts"]] == ["p0", "p1", "p2"]
        by_name = {x["name"]: x for x in h["hosts"]}
        assert by_name["p1"]["straggler"] and by_name["p1"]["compute_ms"] > 60, h
        assert by_name["p0"]["wait_ms"] > 5, h   # the fast ones wait for p1 inside the allreduce
        assert doc["agent"]["reported"] and doc["agent"]["stragglers"] == ["p1"], doc["agent"]


def test_equal_steps_name_nobody(job):
    docs = run_three(job, None)
    for n, doc in docs.items():
        assert doc["health"]["evaluations"] > 0, doc
        assert doc["health"]["stragglers"] == [], (n, doc["health"])


def test_elastic_with_health_names_the_slower_host_on_every_rank(job):
    docs = run_three(job, "p2", ELASTIC_CHILD)
    for n, doc in docs.items():
        assert doc["health"]["stragglers"] == ["p2"], (n, doc["health"])
        assert doc["agent"]["stragglers"] == ["p2"], doc["agent"]

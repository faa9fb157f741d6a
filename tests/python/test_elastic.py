"""shoal.torch.Elastic with real processes on loopback: a host killed (rank 0's or another's), a host
joining, a host dying in the middle of a backward pass. The survivors keep their processes and their
state; no step is applied on some ranks only; no sample of an epoch is skipped or repeated."""
import contextlib
import os

import pytest

from agents import Trainer, free_ports
from conftest import run_child, run_pair, wait_for

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "..", "examples", "python", "elastic_ddp.py")
BATCH, DATASET = 8, 4096  # as in the example


def start_world(script, n, job, tmp_path, extra=()):
    ports = free_ports(n + 2)
    first = Trainer(script, "h0", ports[0], None, job, str(tmp_path), extra)
    addr = wait_for(first.addr, 30, "h0 to start")
    hosts = [first] + [Trainer(script, "h%d" % i, ports[i], addr, job, str(tmp_path), extra) for i in range(1, n)]
    return hosts, ports


def in_world(hosts, world, at_least=1):
    """Every host printed at least `at_least` steps in a world of `world`."""
    return all(sum(1 for d in h.steps() if d["world"] == world) >= at_least for h in hosts)


@contextlib.contextmanager
def running(hosts):
    """Stops every host at the end; on a failure first prints the tails of their stderr."""
    try:
        yield hosts
    except BaseException:
        for h in hosts:
            print("==== %s (exit %s), last lines:\n%s\n---- stderr:\n%s" % (
                h.name, h.proc.poll(), "\n".join(t for _, t in h._lines()[-4:]), h.stderr_text()[-6000:]))
        raise
    finally:
        for h in hosts:
            h.stop()


def check_steps(hosts):
    """Every line ok; one (pos, data_epoch, world) per step across ranks; consecutive steps take
    consecutive samples; no host printed a step twice; every host kept its process."""
    by_step = {}
    for h in hosts:
        steps = h.steps()
        assert all(d["ok"] for d in steps), [d for d in steps if not d["ok"]][:3]
        assert all(d.get("state_ok", True) for d in steps), [d for d in steps if not d.get("state_ok", True)][:3]
        numbers = [d["step"] for d in steps]
        assert numbers == sorted(set(numbers)), "%s printed a step twice or out of order" % h.name
        assert len({d["pid"] for d in steps}) == 1, "%s restarted" % h.name
        for d in steps:
            key = (d["pos"], d["data_epoch"], d["world"])
            assert by_step.setdefault(d["step"], key) == key, ("ranks disagree on step", d["step"], key)
    numbers = sorted(by_step)
    assert numbers == list(range(numbers[0], numbers[-1] + 1)), "a step is missing from every host"
    for s in numbers[:-1]:
        pos, ep, world = by_step[s]
        npos, nep, nworld = by_step[s + 1]
        if nep == ep:
            assert npos == pos + world * BATCH, ("samples skipped or repeated", s, by_step[s], by_step[s + 1])
        else:
            assert nep == ep + 1 and npos == 0 and pos + world * BATCH + nworld * BATCH > DATASET, \
                ("an epoch ended early", s, by_step[s], by_step[s + 1])


@pytest.mark.parametrize("victim_rank", [1, 0])
def test_a_killed_host_costs_the_survivors_no_process_and_no_state(job, tmp_path, victim_rank):
    hosts, _ = start_world(EXAMPLE, 3, job, tmp_path, ["--min-hosts", "2", "--steps", "1000000", "--step-ms", "10"])
    with running(hosts):
        wait_for(lambda: in_world(hosts, 3, 5), 90, "three hosts training together")
        victim = next(h for h in hosts if any(d["rank"] == victim_rank and d["world"] == 3 for d in h.steps()))
        victim.kill()
        survivors = [h for h in hosts if h is not victim]
        wait_for(lambda: in_world(survivors, 2, 10), 60, "the survivors training in a world of 2")
        check_steps(survivors)
        assert any("rebuild_ms" in d for d in survivors[0].steps() if d["world"] == 2)


@pytest.mark.parametrize("loader", [[], ["--loader", "--loader-workers", "2"]], ids=["dataset", "dataloader"])
def test_a_join_hands_the_newcomer_the_live_state_and_redoes_nothing(job, tmp_path, loader):
    """With --loader, the batches come from the user's own DataLoader (two worker processes), restarted
    from the global position by Elastic.batches() whenever the world changes."""
    flags = ["--min-hosts", "2", "--steps", "1000000", "--step-ms", "10"] + loader
    hosts, ports = start_world(EXAMPLE, 2, job, tmp_path, flags)
    with running(hosts):
        wait_for(lambda: in_world(hosts, 2, 10), 90, "two hosts training together")
        newcomer = Trainer(EXAMPLE, "h9", ports[-1], hosts[0].addr(), job, str(tmp_path), flags)
        hosts.append(newcomer)
        wait_for(lambda: in_world(hosts, 3, 10), 60, "three hosts training together")
        first = newcomer.steps()[0]
        assert first["step"] > 10 and first["state_ok"], first  # it started from the live state, not step 0
        check_steps(hosts)


def test_a_host_dying_in_the_middle_of_a_backward_pass(job, tmp_path):
    script = os.path.join(HERE, "backward_fault_trainer.py")
    hosts, _ = start_world(script, 3, job, tmp_path, ["--min-hosts", "2", "--steps", "60", "--die-at", "20",
                                                   "--wait-world", "3"])
    with running(hosts):
        for h in hosts:
            h.proc.wait(120)
        dead = [h for h in hosts if h.proc.returncode == -9]
        survivors = [h for h in hosts if h.proc.returncode == 0]
        assert len(dead) == 1 and len(survivors) == 2, [h.proc.returncode for h in hosts]
        for h in survivors:
            steps = h.steps()
            assert [d["step"] for d in steps] == list(range(60)), "a step is missing or was done twice"
            assert all(d["ok"] and d.get("state_ok", True) for d in steps)
            assert len({d["pid"] for d in steps}) == 1
            assert {d["world"] for d in steps if d["step"] >= 21} == {2}
        died_step = max(d["step"] for d in dead[0].steps()) + 1
        assert died_step == 20


BAD_START = r'''
import sys, torch, torch.distributed as dist, shoal, shoal.torch
job, what = sys.argv[1], sys.argv[2]
s = shoal.Session.start(insecure=True, name="solo", bind="127.0.0.1:0", control_path="none", cluster=job, job=job, log_spec="error")
model = torch.nn.Linear(2, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
if what == "own-group":
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % int(sys.argv[3]), rank=0, world_size=1)
    try:
        shoal.torch.Elastic(s, model, opt)
    except RuntimeError as e:
        print(e)
elif what == "ddp":
    try:
        shoal.torch.Elastic(s, torch.nn.parallel.DistributedDataParallel(model), opt)
    except Exception as e:
        print(e)
s.leave()
'''


def test_a_script_with_its_own_process_group_is_told_what_to_do(job):
    port = free_ports(1)[0]
    proc, _ = run_child(BAD_START, job, "own-group", port)
    out = proc.stdout.decode()
    assert "init_process_group was called" in out and "Remove the init_process_group call" in out, out


DIFFERENT_MODELS = r'''
import json, sys, torch, shoal, shoal.torch
job, name, seed, addr = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
s = shoal.Session.start(insecure=True, name=name, host=name, bind="127.0.0.1:0", control_path="none", cluster=job, job=job,
                        seeds=[addr] if addr != "-" else [], min_hosts=2, log_spec="error")
print(json.dumps({"addr": s.address}), flush=True)
torch.manual_seed(seed)
model = torch.nn.Linear(4, 1)
job_ = shoal.torch.Elastic(s, model, torch.optim.SGD(model.parameters(), lr=0.1))
try:
    job_.ensure_world()
    print(json.dumps({"error": None}), flush=True)
except RuntimeError as e:
    print(json.dumps({"error": str(e)}), flush=True)
s.leave()
'''


def test_parameters_that_differ_across_ranks_at_start_are_reported_not_averaged(job):
    first, second = run_pair(DIFFERENT_MODELS, [job, "a", "1", "-"], [job, "b", "2", "{addr}"])
    errors = [first[-1]["error"], second[-1]["error"]]
    for e in errors:
        assert e and "parameters differ across ranks" in e and "torch.manual_seed" in e, errors

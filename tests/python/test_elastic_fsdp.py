"""shoal.torch.ElasticFSDP with real processes on loopback (examples/python/elastic_fsdp.py, embedded agents,
a flash checkpoint every step): a whole host killed with SIGKILL, then a new host joining. The survivors keep
their processes; after each rebuild every rank restored a step every survivor had completed, the full
parameters right after the restore are those printed at that step (the reshard N -> M lost nothing), every
rank prints the same full-parameter checksum per step, and no sample of an epoch is skipped or repeated."""
import os

import pytest
import torch

import shoal.torch.elastic_fsdp as elastic_fsdp
from agents import Trainer
from conftest import run_pair, wait_for
from test_elastic import BATCH, DATASET, running, start_world

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "..", "examples", "python", "elastic_fsdp.py")
TORCH = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])

needs_fsdp2 = pytest.mark.skipif(TORCH < (2, 6), reason="FSDP2 (fully_shard) on CPU and Gloo needs torch 2.6 or newer")


def epochs(host):
    """The host's step lines grouped by the view (epoch) they were printed in, in order."""
    out = {}
    for d in host.steps():
        out.setdefault(d["epoch"], []).append(d)
    return out


def in_epoch_after(hosts, epoch, world, at_least):
    """Every host printed at least `at_least` steps in one view newer than `epoch`, of `world` ranks."""
    def newest(h):
        newer = [e for e in epochs(h) if e > epoch]
        return max(newer) if newer else None
    views = {newest(h) for h in hosts}
    if len(views) != 1 or None in views:
        return None
    (view,) = views
    lines = [epochs(h)[view] for h in hosts]
    if all(len(ls) >= at_least and ls[0]["world"] == world for ls in lines):
        return view
    return None


def check_restore(hosts, before, after):
    """Every host's first line in view `after` restored a step that every host of `before` (the hosts that
    were in the earlier view) printed there, with the checksum printed at that step."""
    restored = set()
    for h in hosts:
        first = epochs(h)[after][0]
        step = first.get("restored_step")
        assert step is not None and first["step"] == step + 1, ("no restore at the rebuild", h.name, first)
        assert first["state_ok"], first
        restored.add((step, first["state_checksum"]))
    assert len(restored) == 1, ("the ranks restored different steps or states", restored)
    (step, checksum), = restored
    for h in before:
        printed = {d["step"]: d for d in epochs(h)[max(e for e in epochs(h) if e < after)]}
        assert step in printed, ("the restored step %d was not completed by %s" % (step, h.name), sorted(printed))
        assert printed[step]["checksum"] == checksum, ("the restored parameters differ from step %d's" % step,
                                                       printed[step], checksum)
    return step


def check_lines(hosts):
    """One pid per host; every line ok; per (view, step) one checksum and one (pos, data_epoch) across ranks;
    the latest print of every step (a restore may redo steps) takes the samples right after its
    predecessor's."""
    final = {}
    seen = {}
    for h in hosts:
        steps = h.steps()
        assert len({d["pid"] for d in steps}) == 1, "%s restarted" % h.name
        assert all(d["ok"] and d.get("state_ok", True) for d in steps), [d for d in steps if not d["ok"]][:3]
        for d in steps:
            key = (d["epoch"], d["step"])
            got = (d["checksum"], d["pos"], d["data_epoch"], d["world"])
            assert seen.setdefault(key, got) == got, ("ranks disagree on a step", key, seen[key], got)
            if final.get(d["step"], (-1,))[0] <= d["epoch"]:
                final[d["step"]] = (d["epoch"], d["pos"], d["data_epoch"], d["world"])
    numbers = sorted(final)
    assert numbers == list(range(numbers[0], numbers[-1] + 1)), "a step is missing from every host"
    for s in numbers[:-1]:
        _, pos, ep, world = final[s]
        _, npos, nep, nworld = final[s + 1]
        if nep == ep:
            assert npos == pos + world * BATCH, ("samples skipped or repeated", s, final[s], final[s + 1])
        else:
            assert nep == ep + 1 and npos == 0 and pos + world * BATCH + nworld * BATCH > DATASET, \
                ("an epoch ended early", s, final[s], final[s + 1])


@needs_fsdp2
def test_fsdp2_survivors_reshard_in_place_after_a_kill_and_again_after_a_join(job, tmp_path):
    flags = ["--min-hosts", "2", "--steps", "1000000", "--step-ms", "20", "--ckpt-every", "1"]
    hosts, ports = start_world(EXAMPLE, 3, job, tmp_path, flags)
    with running(hosts):
        first_view = wait_for(lambda: in_epoch_after(hosts, -1, 3, 3), 90, "three hosts training together")
        victim = next(h for h in hosts if epochs(h)[first_view][0]["rank"] == 1)
        victim.kill()
        survivors = [h for h in hosts if h is not victim]
        shrunk = wait_for(lambda: in_epoch_after(survivors, first_view, 2, 3), 60, "the survivors in a world of 2")
        check_restore(survivors, survivors, shrunk)
        assert any("rebuild_ms" in epochs(h)[shrunk][0] for h in survivors)

        newcomer = Trainer(EXAMPLE, "h9", ports[-1], survivors[0].addr(), job, str(tmp_path), flags)
        hosts.append(newcomer)
        grown_hosts = survivors + [newcomer]
        grown = wait_for(lambda: in_epoch_after(grown_hosts, shrunk, 3, 3), 60, "the newcomer training with them")
        check_restore(grown_hosts, survivors, grown)
        check_lines(grown_hosts)


DIFFERENT_SEEDS = r'''
import json, sys, torch, shoal, shoal.torch
from torch.distributed.fsdp import fully_shard
job, name, seed, addr = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
s = shoal.Session.start(insecure=True, name=name, host=name, bind="127.0.0.1:0", control_path="none", cluster=job,
                        job=job, seeds=[addr] if addr != "-" else [], min_hosts=2, log_spec="error")
print(json.dumps({"addr": s.address}), flush=True)
torch.manual_seed(seed)
def build(mesh):
    model = torch.nn.Linear(4, 2)
    fully_shard(model, mesh=mesh)
    return model, torch.optim.AdamW(model.parameters(), lr=0.1)
job_ = shoal.torch.ElasticFSDP(s, build)
try:
    job_.ensure_world()
    print(json.dumps({"error": None}), flush=True)
except RuntimeError as e:
    print(json.dumps({"error": str(e)}), flush=True)
s.leave()
'''


@needs_fsdp2
def test_fsdp2_ranks_that_built_from_different_seeds_are_told_at_the_start(job):
    first, second = run_pair(DIFFERENT_SEEDS, [job, "a", "1", "-"], [job, "b", "2", "{addr}"])
    errors = [first[-1]["error"], second[-1]["error"]]
    for e in errors:
        assert e and "different random states" in e and "torch.manual_seed" in e, errors


@pytest.mark.parametrize("make", [
    lambda ps: torch.optim.AdamW(ps, lr=0.1, weight_decay=0.5),
    lambda ps: torch.optim.Adam(ps, lr=0.1, weight_decay=0.5, amsgrad=True),
    lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.5),
    lambda ps: torch.optim.RMSprop(ps, lr=0.1, momentum=0.5, weight_decay=0.5),
], ids=["adamw", "adam-amsgrad", "sgd-momentum", "rmsprop"])
def test_an_optimizer_gets_its_state_tensors_with_no_parameter_gradient_or_lr_changed(make):
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    opt = make(model.parameters())
    model.weight.grad = torch.ones_like(model.weight)  # a gradient the caller holds stays
    before = [p.detach().clone() for p in model.parameters()]
    elastic_fsdp.materialize_optimizer_state(opt)
    assert all(opt.state[p] for p in model.parameters()), "a parameter has no optimizer state"
    assert all(torch.equal(a, p) for a, p in zip(before, model.parameters())), "a parameter changed"
    assert torch.equal(model.weight.grad, torch.ones_like(model.weight)) and model.bias.grad is None
    assert opt.param_groups[0]["lr"] == 0.1
    tensors = {k: v.clone() for k, v in opt.state[model.weight].items() if isinstance(v, torch.Tensor)}
    elastic_fsdp.materialize_optimizer_state(opt)  # state already there: left as it is
    assert all(torch.equal(v, opt.state[model.weight][k]) for k, v in tensors.items())


@pytest.mark.parametrize("older, newer", [
    ((3, 0, 900), (4, 0, 10)),   # a newer view's save outranks any step of an older view's line
    ((4, 0, 10), (4, 1, 5)),     # a rebuild of the same view (a new attempt) too
    ((4, 1, 5), (4, 1, 6)),      # within one view and attempt, the training step orders them
    ((0, 0, 0), (0, 0, 1)),
])
def test_checkpoint_numbers_order_views_before_steps(older, newer):
    assert elastic_fsdp.checkpoint_step(*older) < elastic_fsdp.checkpoint_step(*newer)
    assert elastic_fsdp.checkpoint_step(*newer) & elastic_fsdp.STEP_MASK == newer[2]


@pytest.mark.parametrize("epoch, step", [(1 << 23, 0), (0, 1 << 32), (-1, 0), (0, -1)])
def test_checkpoint_numbers_out_of_range_are_refused(epoch, step):
    with pytest.raises(ValueError, match="epoch"):
        elastic_fsdp.checkpoint_step(epoch, 0, step)

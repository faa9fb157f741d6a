"""shoal.torch.Elastic with a fixed global batch: micro-batches with gradient accumulation follow a reference
that trains on the whole global batch at once, in one process and across a lost and a gained host (real
agents, real Gloo); on_reset after every build; job.stats(); the timeout rule of shoal::ElasticLoop."""
import logging
import os

import pytest
import torch

import shoal
import shoal.torch
from agents import Trainer, free_ports
from conftest import run_pair, wait_for
from test_elastic import running

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "global_batch_trainer.py")
# The step's gradient is summed in another order than the reference's (per micro-batch, then across ranks), which
# moves the last bits of float32 (eps 1.2e-7). So every step is checked twice, normwise (max |a - b| over the
# largest |b| of the tensor: a near-zero parameter's own relative error says nothing): one step of the reference
# from the parameters and momentum the run printed for the step before must give the run's next ones within
# STEP_RTOL (measured: at most 4.4e-7 over kill-and-join runs), and the whole run, which accumulates those
# differences, must stay within RUN_RTOL of the reference trained from the start (measured: 0.8e-6 to 1.6e-6
# after 67 to 188 steps, growing with the steps).
STEP_RTOL, RUN_RTOL = 1e-5, 1e-4
TORCH = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])
needs_fsdp2 = pytest.mark.skipif(TORCH < (2, 6), reason="FSDP2 (fully_shard) on CPU and Gloo needs torch 2.6 or newer")


def step_indices(steps, global_batch, seed=3):
    """The global batch of each of `steps` steps, in the sampler's order (the world does not matter)."""
    import global_batch_trainer as w
    sampler = shoal.torch.ElasticSampler(w.DATASET, global_batch=global_batch, seed=seed)
    out = []
    for _ in range(steps):
        out.append(sampler.indices(0, 1))
        sampler.advance(1)
    return out


def flat(model, optimizer=None):
    if optimizer is None:
        return torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    return torch.cat([optimizer.state[p]["momentum_buffer"].reshape(-1) for p in model.parameters()])


def reference_steps(steps, global_batch, start=None):
    """The parameters (and momentum buffers) after each of `steps` steps of the worker's model trained in one
    process on each step's whole global batch (the mean loss over its samples). start: (step, params,
    momentum) to go on from instead of step 0."""
    import global_batch_trainer as w
    model, optimizer, xs, ys = w.reference_parts()
    first = 0
    if start is not None:
        first, params, momentum = start[0] + 1, torch.tensor(start[1]), torch.tensor(start[2])
        at = 0
        with torch.no_grad():
            for p in model.parameters():
                n = p.numel()
                p.copy_(params[at:at + n].reshape(p.shape))
                optimizer.state[p]["momentum_buffer"] = momentum[at:at + n].reshape(p.shape).clone()
                at += n
    out = []
    for idx in step_indices(first + steps, global_batch)[first:]:
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(xs[idx]), ys[idx]).backward()
        optimizer.step()
        out.append((flat(model), flat(model, optimizer)))
    return out


def deviation(values, ref):
    """max |a - b| / max |b|: the normwise relative deviation of `values` from the tensor `ref`."""
    return float((torch.tensor(values) - ref).abs().max() / ref.abs().max())


def single_job(session, global_batch, micro_batch, **kwargs):
    import global_batch_trainer as w
    model, optimizer, xs, ys = w.reference_parts()
    sampler = shoal.torch.ElasticSampler(w.DATASET, global_batch=global_batch, micro_batch=micro_batch, seed=3)
    return shoal.torch.Elastic(session, model, optimizer, sampler=sampler, **kwargs), model, optimizer, xs, ys


def test_micro_batches_in_one_process_follow_the_whole_batch(session, caplog):
    resets = []
    job, model, optimizer, xs, ys = single_job(session, 12, 5, on_reset=resets.append)
    ref = [p for p, _ in reference_steps(4, 12)]
    with caplog.at_level(logging.INFO, logger="shoal.torch"):
        for batch in job.batches(list(zip(xs, ys)), steps=4):
            step = job.next_step
            with job.step():
                optimizer.zero_grad()
                parts = 0
                for x, y in job.micro_batches(batch):
                    parts += 1
                    job.backward(torch.nn.functional.mse_loss(job.model(x), y))
                optimizer.step()
            assert parts == 3  # ceil(12 / 5), sizes 4, 4, 4
            params = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).tolist()
            assert deviation(params, ref[step]) <= STEP_RTOL, step
    stats = job.stats()
    assert (stats.steps_completed, stats.samples_trained, stats.rebuilds, stats.steps_discarded) == (4, 48, 0, 0)
    assert 0.0 < stats.ettr <= 1.0
    assert any("Elastic run: 4 steps (48 samples)" in r.getMessage() for r in caplog.records)
    assert [(r.old_world, r.new_world, r.next_step, r.restored_step, r.rebuilds) for r in resets] == [
        (None, 1, 0, None, 0)]
    job.close()


@pytest.mark.parametrize("loader", [False, True], ids=["dataset", "dataloader"])
def test_a_dataloader_or_a_dataset_gives_each_rank_its_share(session, loader):
    job, model, optimizer, xs, ys = single_job(session, 10, 3)
    source = list(zip(xs, ys))
    if loader:
        source = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(xs, ys), batch_sampler=job.sampler)
    ref = [p for p, _ in reference_steps(3, 10)]
    for x, y in job.batches(source, steps=3):
        step = job.next_step
        assert len(x) == 10
        with job.step():
            optimizer.zero_grad()
            sizes = []
            for mx, my in job.micro_batches((x, y)):
                sizes.append(len(mx))
                job.backward(torch.nn.functional.mse_loss(job.model(mx), my))
            optimizer.step()
        assert sizes == [3, 3, 2, 2]
        params = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).tolist()
        assert deviation(params, ref[step]) <= STEP_RTOL, step
    job.close()


@needs_fsdp2
def test_fsdp2_micro_batches_in_one_process_follow_the_whole_batch(session):
    import global_batch_trainer as w
    _, _, xs, ys = w.reference_parts()
    sampler = shoal.torch.ElasticSampler(w.DATASET, global_batch=12, micro_batch=5, seed=3)
    job = shoal.torch.ElasticFSDP(session, w.fsdp_build, sampler=sampler)
    ref = [p for p, _ in reference_steps(3, 12)]
    for step, _, params in w.fsdp_steps(job, list(zip(xs, ys)), 3):
        assert deviation(params, ref[step]) <= STEP_RTOL, step
    job.close()


FSDP_PAIR = r'''
import json, sys, torch, shoal, shoal.torch
import global_batch_trainer as w
job, name, addr = sys.argv[1], sys.argv[2], sys.argv[3]
s = shoal.Session.start(insecure=True, name=name, host=name, bind="127.0.0.1:0", control_path="none", cluster=job,
                        job=job, seeds=[addr] if addr != "-" else [], min_hosts=2, log_spec="error")
print(json.dumps({"addr": s.address}), flush=True)
torch.set_num_threads(1)
_, _, xs, ys = w.reference_parts()
sampler = shoal.torch.ElasticSampler(w.DATASET, global_batch=9, micro_batch=2, seed=3)
job_ = shoal.torch.ElasticFSDP(s, w.fsdp_build, sampler=sampler)
for step, world, params in w.fsdp_steps(job_, list(zip(xs, ys)), 3):
    print(json.dumps({"step": step, "world": world, "params": params}), flush=True)
job_.close()
s.leave()
'''


@needs_fsdp2
def test_fsdp2_micro_batches_over_two_ranks_follow_the_whole_batch(job):
    """Shares 5 and 4 of a global batch of 9, both in K = ceil(5 / 2) = 3 micro-batches (2, 2, 1 and 2, 1, 1):
    FSDP2's gathers line up, and its reduce-scatter averages as the loss scale assumes."""
    code = "import sys; sys.path.insert(0, %r)\n" % HERE + FSDP_PAIR
    first, second = run_pair(code, [job, "a", "-"], [job, "b", "{addr}"])
    ref = [p for p, _ in reference_steps(3, 9)]
    lines = [d for d in first + second if "step" in d]
    assert len(lines) == 6 and {d["world"] for d in lines} == {2}
    for d in lines:
        assert deviation(d["params"], ref[d["step"]]) <= STEP_RTOL, d["step"]


def test_a_micro_batch_loop_left_early_or_a_backward_outside_it_is_an_error(session):
    job, model, optimizer, xs, ys = single_job(session, 12, 4)
    batches = job.batches(list(zip(xs, ys)), steps=2)
    batch = next(batches)
    with pytest.raises(RuntimeError, match="inside `for part in job.micro_batches"):
        job.backward(model(xs[:2]).sum())
    with pytest.raises(RuntimeError, match="ended in the middle of job.micro_batches"):
        with job.step():
            for x, y in job.micro_batches(batch):
                job.backward(torch.nn.functional.mse_loss(job.model(x), y))
                break
    with pytest.raises(ValueError, match="share of a step of global_batch=12 over 1 ranks is 12 samples; the batch "
                                         "given has 3"):
        with job.step():
            next(iter(job.micro_batches((xs[:3], ys[:3]))))
    batches.close()
    job.close()


def test_lr_scaling_with_a_global_batch_is_refused(session):
    with pytest.raises(ValueError, match="lr_scaling='linear' with ElasticSampler\\(global_batch=12\\)"):
        single_job(session, 12, 4, lr_scaling="linear")


def test_lr_scaling_and_on_reset_set_the_rate_after_the_state_is_settled(session):
    """on_reset runs after the build's state settle and after lr_scaling, so what it sets stands."""
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    seen = []

    def on_reset(info):
        seen.append(optimizer.param_groups[0]["lr"])
        optimizer.param_groups[0]["lr"] = 0.25

    job = shoal.torch.Elastic(session, model, optimizer, sampler=shoal.torch.ElasticSampler(16, 2),
                              lr_scaling="sqrt", on_reset=on_reset)
    job.ensure_world()
    assert seen == [0.1] and optimizer.param_groups[0]["lr"] == 0.25  # W = W0: factor 1
    job.close()


def test_an_on_reset_that_raises_stops_the_run_naming_it(session):
    def broken_hook(info):
        raise KeyError("no schedule for world %d" % info.new_world)

    job, *_ = single_job(session, 12, 4, on_reset=broken_hook)
    with pytest.raises(RuntimeError, match="on_reset=.*broken_hook raised KeyError.*no schedule for world 1.*"
                                           "the run stops") as got:
        job.ensure_world()
    assert isinstance(got.value.__cause__, KeyError) and job.comm.aborted
    job.close()


def test_no_view_within_view_timeout_ends_the_run_as_in_cpp(job):
    """shoal::ElasticLoop ends the run when communicator() times out (no usable view); Elastic did retry for
    ever. A session that waits for a second host that never comes."""
    s = shoal.Session.start(insecure=True, name="solo", bind="127.0.0.1:0", control_path="none", cluster=job, job=job,
                            log_spec="error", min_hosts=2, view_timeout=1.0)
    try:
        model = torch.nn.Linear(2, 1)
        elastic = shoal.torch.Elastic(s, model, torch.optim.SGD(model.parameters(), lr=0.1))
        with pytest.raises(shoal.Timeout):
            elastic.ensure_world()
    finally:
        s.leave()


def steps_in_world(host, world):
    return [d for d in host.steps() if d["world"] == world]


def test_a_fixed_global_batch_follows_the_reference_through_a_loss_and_a_join(job, tmp_path):
    """Three hosts, global batch 10 in micro-batches of at most 2 (world 3: shares 4, 3, 3 in 2 micro-batches;
    world 2: 5 and 5 in 3); a host SIGKILLed, then a newcomer. Every step every host printed holds the
    parameters the one-process reference holds after that step."""
    stop = str(tmp_path / "stop")
    flags = ["--min-hosts", "2", "--step-ms", "20", "--global-batch", "10", "--micro-batch", "2", "--stop-file", stop]
    ports = free_ports(5)
    first = Trainer(WORKER, "h0", ports[0], None, job, str(tmp_path), flags)
    hosts = [first]
    with running(hosts):
        addr = wait_for(first.addr, 30, "h0 to start")
        hosts += [Trainer(WORKER, "h%d" % i, ports[i], addr, job, str(tmp_path), flags) for i in (1, 2)]
        wait_for(lambda: all(len(steps_in_world(h, 3)) >= 3 for h in hosts), 60, "three hosts training together")
        victim = next(h for h in hosts if steps_in_world(h, 3)[0]["rank"] == 1)
        victim.kill()
        survivors = [h for h in hosts if h is not victim]
        wait_for(lambda: all(len(steps_in_world(h, 2)) >= 3 for h in survivors), 60, "the survivors in a world of 2")
        newcomer = Trainer(WORKER, "h9", ports[4], addr, job, str(tmp_path), flags)
        hosts.append(newcomer)
        grown = survivors + [newcomer]
        wait_for(lambda: all(len(steps_in_world(h, 3)) >= 3 for h in grown), 60, "the newcomer training with them")
        open(stop, "w").close()
        for h in grown:
            h.proc.wait(30)
            assert h.proc.returncode == 0, (h.name, h.proc.returncode)

        # Every rank printed the same values for a step (DDP's ranks apply one gradient), a step from the
        # previous one is the reference's step, and the run follows the reference trained from the start.
        by_step = {}
        for h in hosts:
            for d in h.steps():
                got = by_step.setdefault(d["step"], d)
                assert (got["params"], got["momentum"]) == (d["params"], d["momentum"]), ("ranks differ", d["step"])
        last = max(by_step)
        assert sorted(by_step) == list(range(last + 1)), "a step is missing from every host"
        whole = reference_steps(last + 1, 10)
        worst_step = worst_run = 0.0
        for s, d in sorted(by_step.items()):
            prev = by_step.get(s - 1)
            ref = reference_steps(1, 10, (s - 1, prev["params"], prev["momentum"]))[0] if prev else whole[0]
            one = max(deviation(d["params"], ref[0]), deviation(d["momentum"], ref[1]))
            run = deviation(d["params"], whole[s][0])
            assert one <= STEP_RTOL, ("step %d (world %d) is not the global batch's step" % (s, d["world"]), one)
            assert run <= RUN_RTOL, ("step %d (world %d) is off the reference" % (s, d["world"]), run)
            worst_step, worst_run = max(worst_step, one), max(worst_run, run)
        print("largest deviation from the reference: one step %.3g, the run %.3g after %d steps" % (
            worst_step, worst_run, last + 1))
        assert {d["k"] for h in survivors for d in h.steps()} == {2, 3}

        for h in survivors:
            resets = [(d["old_world"], d["new_world"]) for _, d in h.docs() if d.get("event") == "reset"]
            # (h0 and h1 may train in a world of 2 before h2 joins them)
            assert resets[0][0] is None and (3, 2) in resets and resets[-1] == (2, 3), (h.name, resets)
            stats = next(d for _, d in h.docs() if d.get("event") == "stats")
            assert stats["rebuilds"] >= 2 and stats["rebuild_s"] > 0 and 0 < stats["ettr"] < 1, stats
            assert stats["samples_trained"] == 10 * (stats["steps_completed"] - stats["steps_redone"]), stats
        news = [(d["old_world"], d["new_world"]) for _, d in newcomer.docs() if d.get("event") == "reset"]
        assert news[0] == (None, 3), news

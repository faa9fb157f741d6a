"""The pure parts of a global batch whatever the world: batch_plan.plan_step's split over ranks and
micro-batches (tables and invariants), ElasticSampler with global_batch= (its order, its loader form, bad
input), lr_scaling's factors, and run_stats' accounting on a fake clock."""
import math

import pytest
import torch

import shoal.torch
from shoal.torch import accumulation
from shoal.torch.batch_plan import plan_step
from shoal.torch.run_stats import RunStats


@pytest.mark.parametrize("B, b, W, shares, offsets, sizes", [
    (8, 4, 2, (4, 4), (0, 4), ((4,), (4,))),                           # divisible: one micro-batch each
    (10, 2, 3, (4, 3, 3), (0, 4, 7), ((2, 2), (2, 1), (2, 1))),         # ceil/floor shares, K from the largest
    (10, 2, 2, (5, 5), (0, 5), ((2, 2, 1), (2, 2, 1))),
    (5, 1, 4, (2, 1, 1, 1), (0, 2, 3, 4), ((1, 1), (1, 0), (1, 0), (1, 0))),  # zero-weight micro-batches
    (7, None, 3, (3, 2, 2), (0, 3, 5), ((3,), (2,), (2,))),             # no micro_batch: one pass per rank
    (12, 5, 1, (12,), (0,), ((4, 4, 4),)),                              # even sizes, none above b
    (3, 3, 3, (1, 1, 1), (0, 1, 2), ((1,), (1,), (1,))),
])
def test_a_step_splits_into_shares_and_micro_batches(B, b, W, shares, offsets, sizes):
    plan = plan_step(B, b, W)
    assert plan.shares == shares and plan.offsets == offsets
    assert tuple(plan.sizes(r) for r in range(W)) == sizes
    assert plan.micro_batches == len(sizes[0])


@pytest.mark.parametrize("W", range(1, 9))
@pytest.mark.parametrize("b", [1, 2, 3, 7, None])
@pytest.mark.parametrize("B", [8, 9, 13, 24, 31])
def test_every_split_covers_the_global_batch_once_and_weights_the_mean(B, b, W):
    if B < W:
        pytest.skip("refused (below)")
    plan = plan_step(B, b, W)
    assert sum(plan.shares) == B and max(plan.shares) - min(plan.shares) <= 1
    assert plan.offsets == tuple(sum(plan.shares[:r]) for r in range(W))
    weight = 0.0
    for r in range(W):
        sizes = plan.sizes(r)
        assert len(sizes) == plan.micro_batches and sum(sizes) == plan.shares[r]
        assert b is None or max(sizes) <= b
        assert all(n > 0 for n in sizes) or plan.shares[r] < plan.micro_batches
        weight += sum(plan.loss_scale(n) for n in sizes) / W  # DDP averages over W
    assert math.isclose(weight, 1.0)
    assert b is None or plan.micro_batches == -(-(-(-B // W)) // b)


@pytest.mark.parametrize("args, match", [
    ((2, 1, 3), "global_batch=2 is smaller than the world of 3"),
    ((4, 5, 1), "micro_batch=5 is larger than global_batch=4"),
    ((0, 1, 1), "global_batch must be a positive integer, got 0"),
    ((4, 0, 1), "micro_batch must be a positive integer, got 0"),
    ((4, 1, -1), "world must be a positive integer, got -1"),
    ((True, 1, 1), "global_batch must be a positive integer, got True"),
])
def test_a_plan_that_does_not_fit_is_refused_naming_the_value(args, match):
    with pytest.raises(ValueError, match=match):
        plan_step(*args)


@pytest.mark.parametrize("args, kwargs, match", [
    ((100, 4), {"global_batch": 8}, "batch_size=4 .* or global_batch=8 .*not both"),
    ((100,), {}, "needs batch_size .* or global_batch"),
    ((100,), {"global_batch": -1}, "global_batch must be a positive integer, got -1"),
    ((100,), {"global_batch": 8, "micro_batch": 9}, "micro_batch=9 is larger than global_batch=8"),
    ((100,), {"global_batch": 8, "micro_batch": 0}, "micro_batch must be a positive integer, got 0"),
    ((100, 4), {"micro_batch": 2}, "micro_batch=2 goes with global_batch"),
    ((10,), {"global_batch": 11}, "global_batch=11 is larger than the dataset"),
    ((0, 4), {}, "dataset_size must be a positive integer, got 0"),
    ((100, 0), {}, "batch_size must be a positive integer, got 0"),
])
def test_a_sampler_with_bad_batch_arguments_is_refused_naming_the_value(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        shoal.torch.ElasticSampler(*args, **kwargs)


def test_a_global_batch_sampler_takes_the_same_samples_per_step_whatever_the_world():
    sampler = shoal.torch.ElasticSampler(50, global_batch=10, micro_batch=2, seed=4)
    order = sampler._epoch_order().tolist()
    for step, world in enumerate([3, 2, 4, 1]):
        taken = [i for r in range(world) for i in sampler.indices(r, world)]
        assert taken == order[10 * step:10 * step + 10], (step, world)
        sampler.advance(world)
    with pytest.raises(ValueError, match="global_batch=10 is smaller than the world of 11"):
        sampler.indices(0, 11)
    assert sampler.state_dict()["global_batch"] == 10
    # The positional per-rank form keeps its state as it was.
    assert "global_batch" not in shoal.torch.ElasticSampler(50, 5).state_dict()


def test_a_global_batch_sampler_is_a_dataloaders_batch_sampler():
    sampler = shoal.torch.ElasticSampler(23, global_batch=10, seed=1)
    sampler.set_world(1, 3)
    loader = torch.utils.data.DataLoader(torch.arange(23), batch_sampler=sampler)
    batches = [b.tolist() for b in loader]
    order = sampler._epoch_order().tolist()
    assert batches == [order[4:7], order[14:17]] and len(loader) == len(sampler) == 2  # the tail of 3 is dropped


@pytest.mark.parametrize("policy, world, start, factor", [
    ("none", 4, 2, 1.0), ("linear", 4, 2, 2.0), ("linear", 2, 4, 0.5), ("sqrt", 8, 2, 2.0),
    ("sqrt", 2, 4, math.sqrt(0.5)),
])
def test_lr_scaling_factors(policy, world, start, factor):
    assert math.isclose(accumulation.lr_factor(policy, world, start), factor)


def test_an_unknown_lr_scaling_is_refused():
    with pytest.raises(ValueError, match="lr_scaling='cubic'"):
        accumulation.check_lr_scaling("cubic")


def test_a_batch_is_cut_along_its_first_dimension_keeping_its_structure():
    batch = {"x": torch.arange(6).reshape(3, 2), "y": (torch.arange(3), "tag")}
    assert accumulation.batch_length(batch) == 3
    part = accumulation.slice_batch(batch, 1, 3)
    assert part["x"].tolist() == [[2, 3], [4, 5]] and part["y"][0].tolist() == [1, 2] and part["y"][1] == "tag"
    assert list(accumulation.cuts((2, 0, 1))) == [(0, 2, 2), (0, 1, 0), (2, 3, 1)]


class FakeClock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def test_run_stats_count_what_a_run_lost():
    clock = FakeClock()
    run = RunStats(clock)
    run.loop_started()
    clock.t += 2.0
    run.built(100.0, epoch=1, first=True)                 # startup 2 s
    for step in range(3):                                  # 3 steps of 1 s, the last with a 0.5 s save
        run.step_began()
        clock.t += 1.0
        if step == 2:
            run.saved(0.5)
            clock.t += 0.5
        run.step_completed(step, 10)
    run.step_began()                                       # step 3 cut by a view change after 0.25 s
    clock.t += 0.25
    run.step_discarded()
    broken = clock.t
    clock.t += 1.0
    run.view_committed(2)                                  # the view without the lost host: 1 s later
    clock.t += 0.5
    run.built(broken, epoch=2, first=False)                # rebuilt 0.5 s after it
    run.state_taken(2, 0)                                  # a restore to step 0: steps 1 and 2 rolled back
    for step in (1, 2, 3):
        run.step_began()
        clock.t += 1.0
        run.step_completed(step, 10)
    s = run.snapshot()
    assert (s.steps_completed, s.steps_discarded, s.steps_redone, s.steps_rolled_back, s.rebuilds) == (6, 1, 2, 2, 1)
    assert s.samples_trained == 40  # steps 0..3, each counted once
    assert (s.startup_s, s.stall_s, s.rebuild_s, s.save_s) == (2.0, 1.0, 0.5, 0.5)
    assert s.lost_step_s == 2.25 and s.wall_s == 10.25
    assert math.isclose(s.productive_s, 4.0) and math.isclose(s.ettr, 4.0 / 10.25)
    assert "ETTR 0.390" in s.summary() and set(s.as_dict()) >= {"ettr", "stall_s", "steps_redone"}

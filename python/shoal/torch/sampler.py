"""ElasticSampler: which samples each rank trains on, as a function of one global position that survives
changes of the world size.

The epoch's order is a permutation of the dataset (seeded by seed and epoch; or 0..N-1 unshuffled). A
step takes the next world x batch_size samples of that order: rank r gets the r-th block of batch_size.
After the step every rank advances the same global position by world x batch_size. The position (with
the epoch) is part of the state that survivors keep and newcomers receive, so when the world changes
between steps the new world simply continues from it with its own size: within an epoch no sample is
skipped or repeated, whatever the world sizes were. A step that a view change cut short is not counted:
its samples are taken again by the step that redoes it. The tail of an epoch shorter than one world's
step is dropped (as DistributedSampler's drop_last does), and the next epoch starts.

It is a torch Sampler: a DataLoader(dataset, batch_size=sampler.batch_size, sampler=sampler, ...) with
workers, prefetching and pinned memory yields this rank's batches from the current position to the end of
the epoch, for the rank and world set_world() gave (shoal.torch.Elastic sets them for every view and
restarts the loader's iterator after a view change; Elastic.batches(loader) does it all).

With global_batch=B (instead of batch_size) every step takes B samples of the order whatever the world: rank
r gets its share of them as batch_plan.plan_step splits them (B // W or one more, contiguous blocks), and the
elastic wrappers' micro_batches() splits that share into micro-batches of at most micro_batch samples with
gradient accumulation, so that the step's gradient is the mean over the B samples. The shares differ by one
sample when W does not divide B, so iterating such a sampler yields one list of indices per step (a batch
sampler): DataLoader(dataset, batch_sampler=sampler, ...).
"""
from typing import Dict, Iterator, List, Optional, Union

import torch
from torch.utils.data import Sampler

from .batch_plan import StepPlan, plan_step, positive_int


class ElasticSampler(Sampler):
    def __init__(self, dataset_size: int, batch_size: Optional[int] = None, *, global_batch: Optional[int] = None,
                 micro_batch: Optional[int] = None, seed: int = 0, shuffle: bool = True):
        try:
            super().__init__()  # torch 2.x: no data_source
        except TypeError:
            super().__init__(None)  # torch 1.13 takes one (and ignores it)
        positive_int("dataset_size", dataset_size)
        if batch_size is not None and global_batch is not None:
            raise ValueError("ElasticSampler takes batch_size=%r (per rank) or global_batch=%r (per step, whatever "
                             "the world), not both" % (batch_size, global_batch))
        if batch_size is None and global_batch is None:
            raise ValueError("ElasticSampler needs batch_size (per rank) or global_batch (per step)")
        if batch_size is not None:
            positive_int("batch_size", batch_size)
            if micro_batch is not None:
                raise ValueError("micro_batch=%r goes with global_batch; with batch_size every rank trains on its "
                                 "whole batch in one pass" % (micro_batch,))
        else:
            plan_step(global_batch, micro_batch, 1)  # ValueError for a value that never fits
            if global_batch > dataset_size:
                raise ValueError("global_batch=%d is larger than the dataset (%d samples)" % (global_batch, dataset_size))
        self.rank: Optional[int] = None  # set_world(); default: torch.distributed's
        self.world: Optional[int] = None
        self.dataset_size = dataset_size
        self.batch_size = batch_size  # per rank; None with global_batch
        self.global_batch = global_batch
        self.micro_batch = micro_batch
        self.seed = seed
        self.shuffle = shuffle
        self.epoch = 0
        self.position = 0  # samples of this epoch's order consumed by completed steps
        self._order_epoch = None
        self._order = None

    def step_size(self, world: int) -> int:
        """The samples of the global order one step of a world of `world` ranks takes."""
        return self.global_batch if self.global_batch is not None else world * self.batch_size

    def plan(self, world: int) -> StepPlan:
        """The split of one step over a world of `world` ranks (batch_plan.plan_step; with batch_size: a block of
        batch_size per rank, one micro-batch)."""
        if self.global_batch is not None:
            return plan_step(self.global_batch, self.micro_batch, world)
        return plan_step(world * self.batch_size, None, world)

    def _epoch_order(self) -> torch.Tensor:
        if self._order_epoch != self.epoch:
            if self.shuffle:
                g = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
                self._order = torch.randperm(self.dataset_size, generator=g)
            else:
                self._order = torch.arange(self.dataset_size)
            self._order_epoch = self.epoch
        return self._order

    def _fit(self, world: int) -> None:
        step = self.step_size(world)
        if step > self.dataset_size:
            raise ValueError("a world of %d with batch_size %d needs more than the %d samples of the dataset"
                             % (world, self.batch_size, self.dataset_size))
        if self.global_batch is not None:
            self.plan(world)  # ValueError: a world larger than the global batch
        if self.position + step > self.dataset_size:  # the tail: next epoch
            self.epoch += 1
            self.position = 0

    def indices(self, rank: int, world: int) -> List[int]:
        """The dataset indices rank `rank` of a world of `world` trains on in the next step."""
        self._fit(world)
        plan = self.plan(world)
        start = self.position + plan.offsets[rank]
        return self._epoch_order()[start:start + plan.shares[rank]].tolist()

    def advance(self, world: int) -> None:
        """A step of a world of `world` completed."""
        self._fit(world)
        self.position += self.step_size(world)

    def set_world(self, rank: int, world: int) -> None:
        """The rank and world size the loader's next iterator yields batches for."""
        if world <= 0 or not 0 <= rank < world:
            raise ValueError("set_world: rank %d is outside a world of %d" % (rank, world))
        self.rank, self.world = rank, world

    def _rank_world(self):
        if self.world is not None:
            return self.rank, self.world
        import torch.distributed as dist
        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
        raise RuntimeError("ElasticSampler does not know its rank and world: call set_world(rank, world), or "
                           "iterate it under shoal.torch.Elastic or an initialised torch.distributed")

    def __iter__(self) -> Iterator[Union[int, List[int]]]:
        """This rank's indices for every whole step from the current position to the epoch's end (a
        DataLoader with batch_size=self.batch_size makes one batch of each step's). With global_batch: one
        list of indices per step (DataLoader(dataset, batch_sampler=sampler))."""
        rank, world = self._rank_world()
        self._fit(world)
        order = self._epoch_order()
        plan = self.plan(world)
        step = self.step_size(world)
        start = self.position
        while start + step <= self.dataset_size:
            first = start + plan.offsets[rank]
            block = order[first:first + plan.shares[rank]].tolist()
            if self.global_batch is not None:
                yield block
            else:
                yield from block
            start += step

    def __len__(self) -> int:
        """The samples this rank's iterator yields (batch_size), or its steps (global_batch)."""
        rank, world = self._rank_world()
        step = self.step_size(world)
        position = self.position if self.position + step <= self.dataset_size else 0
        steps = (self.dataset_size - position) // step
        return steps if self.global_batch is not None else steps * self.batch_size

    def state_dict(self) -> Dict[str, int]:
        state = {"epoch": self.epoch, "position": self.position, "seed": self.seed,
                 "dataset_size": self.dataset_size, "batch_size": self.batch_size, "shuffle": self.shuffle}
        if self.global_batch is not None:  # (a per-rank sampler's state stays as it always was)
            state.update(global_batch=self.global_batch, micro_batch=self.micro_batch)
        return state

    def load_state_dict(self, state: Dict[str, int]) -> None:
        # micro_batch is not compared: it changes how many passes a step takes, not which samples it takes.
        for k in ("dataset_size", "batch_size", "seed", "shuffle", "global_batch"):
            if state.get(k) != getattr(self, k):
                raise ValueError("the sampler's state has %s=%r, this sampler %r" % (k, state.get(k), getattr(self, k)))
        self.epoch = int(state["epoch"])
        self.position = int(state["position"])

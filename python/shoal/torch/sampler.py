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
"""
from typing import Dict, Iterator, List, Optional

import torch
from torch.utils.data import Sampler


class ElasticSampler(Sampler):
    def __init__(self, dataset_size: int, batch_size: int, *, seed: int = 0, shuffle: bool = True):
        try:
            super().__init__()  # torch 2.x: no data_source
        except TypeError:
            super().__init__(None)  # torch 1.13 takes one (and ignores it)
        if dataset_size <= 0 or batch_size <= 0:
            raise ValueError("ElasticSampler needs a positive dataset_size and batch_size")
        self.rank: Optional[int] = None  # set_world(); default: torch.distributed's
        self.world: Optional[int] = None
        self.dataset_size = dataset_size
        self.batch_size = batch_size
        self.seed = seed
        self.shuffle = shuffle
        self.epoch = 0
        self.position = 0  # samples of this epoch's order consumed by completed steps
        self._order_epoch = None
        self._order = None

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
        if world * self.batch_size > self.dataset_size:
            raise ValueError("a world of %d with batch_size %d needs more than the %d samples of the dataset"
                             % (world, self.batch_size, self.dataset_size))
        if self.position + world * self.batch_size > self.dataset_size:  # the tail: next epoch
            self.epoch += 1
            self.position = 0

    def indices(self, rank: int, world: int) -> List[int]:
        """The dataset indices rank `rank` of a world of `world` trains on in the next step."""
        self._fit(world)
        start = self.position + rank * self.batch_size
        return self._epoch_order()[start:start + self.batch_size].tolist()

    def advance(self, world: int) -> None:
        """A step of a world of `world` completed."""
        self._fit(world)
        self.position += world * self.batch_size

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

    def __iter__(self) -> Iterator[int]:
        """This rank's indices for every whole step from the current position to the epoch's end (a
        DataLoader with batch_size=self.batch_size makes one batch of each step's)."""
        rank, world = self._rank_world()
        self._fit(world)
        order = self._epoch_order()
        start = self.position
        while start + world * self.batch_size <= self.dataset_size:
            first = start + rank * self.batch_size
            yield from order[first:first + self.batch_size].tolist()
            start += world * self.batch_size

    def __len__(self) -> int:
        rank, world = self._rank_world()
        step = world * self.batch_size
        position = self.position if self.position + step <= self.dataset_size else 0
        return ((self.dataset_size - position) // step) * self.batch_size

    def state_dict(self) -> Dict[str, int]:
        return {"epoch": self.epoch, "position": self.position, "seed": self.seed,
                "dataset_size": self.dataset_size, "batch_size": self.batch_size, "shuffle": self.shuffle}

    def load_state_dict(self, state: Dict[str, int]) -> None:
        for k in ("dataset_size", "batch_size", "seed", "shuffle"):
            if state.get(k) != getattr(self, k):
                raise ValueError("the sampler's state has %s=%r, this sampler %r" % (k, state.get(k), getattr(self, k)))
        self.epoch = int(state["epoch"])
        self.position = int(state["position"])

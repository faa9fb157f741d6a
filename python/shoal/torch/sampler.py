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
"""
from typing import Dict, List

import torch


class ElasticSampler:
    def __init__(self, dataset_size: int, batch_size: int, *, seed: int = 0, shuffle: bool = True):
        if dataset_size <= 0 or batch_size <= 0:
            raise ValueError("ElasticSampler needs a positive dataset_size and batch_size")
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

    def state_dict(self) -> Dict[str, int]:
        return {"epoch": self.epoch, "position": self.position, "seed": self.seed,
                "dataset_size": self.dataset_size, "batch_size": self.batch_size, "shuffle": self.shuffle}

    def load_state_dict(self, state: Dict[str, int]) -> None:
        for k in ("dataset_size", "batch_size", "seed", "shuffle"):
            if state.get(k) != getattr(self, k):
                raise ValueError("the sampler's state has %s=%r, this sampler %r" % (k, state.get(k), getattr(self, k)))
        self.epoch = int(state["epoch"])
        self.position = int(state["position"])

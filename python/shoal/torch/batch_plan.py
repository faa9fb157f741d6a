"""How one step's global batch is split over the ranks of a world and into micro-batches: a pure function,
table-tested (tests/python/test_batch_plan.py), that ElasticSampler and the elastic wrappers' micro_batches()
both read.

The rule, for a global batch of B samples, micro-batches of at most b samples and a world of W ranks:
- rank r takes B // W samples, one more for the first B % W ranks (its share), as one contiguous block of the
  step's B samples after the blocks of the ranks before it;
- every rank runs the same number of micro-batches, K = ceil(ceil(B / W) / b): the collectives of gradient
  accumulation (DDP's one all-reduce at the last micro-batch, FSDP2's gathers at every one) line up;
- rank r splits its share into K micro-batches as evenly as possible (the first share % K of them one sample
  larger), so no micro-batch holds more than b samples;
- a micro-batch with no sample (a share smaller than K, which happens only when b is small: b = 1 and W does
  not divide B) is a zero-weight one: the rank runs it on one sample of its own share with the loss scaled by 0;
- the loss of a micro-batch of n samples (the mean over them) is scaled by n * W / B: DDP and FSDP2 average the
  ranks' gradients (divide by W), so the step's gradient is the mean over the B samples, whatever W is.
B < W (a rank with nothing to train on) is refused, as is b > B.
"""
from dataclasses import dataclass
from typing import Optional, Tuple


def positive_int(name: str, value) -> int:
    """`value` when it is a positive int (not a bool); else ValueError naming `name` and the value."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError("%s must be a positive integer, got %r" % (name, value))
    return value


@dataclass(frozen=True)
class StepPlan:
    """One step's split of the global batch over a world (see the module's text)."""
    global_batch: int
    world: int
    micro_batches: int           # K: the same on every rank
    shares: Tuple[int, ...]      # the samples of each rank
    offsets: Tuple[int, ...]     # where each rank's block starts among the step's global_batch samples

    def sizes(self, rank: int) -> Tuple[int, ...]:
        """The sample counts of rank `rank`'s K micro-batches, in order (0: a zero-weight micro-batch)."""
        share, k = self.shares[rank], self.micro_batches
        return tuple(share // k + (1 if i < share % k else 0) for i in range(k))

    def loss_scale(self, samples: int) -> float:
        """What a micro-batch's mean loss over `samples` samples is multiplied by before backward()."""
        return samples * self.world / self.global_batch


def plan_step(global_batch: int, micro_batch: Optional[int], world: int) -> StepPlan:
    """The split of a step of `global_batch` samples over `world` ranks, in micro-batches of at most
    `micro_batch` samples (None: one micro-batch per rank). ValueError naming the value that does not fit."""
    positive_int("global_batch", global_batch)
    positive_int("world", world)
    if micro_batch is not None:
        positive_int("micro_batch", micro_batch)
        if micro_batch > global_batch:
            raise ValueError("micro_batch=%d is larger than global_batch=%d" % (micro_batch, global_batch))
    if global_batch < world:
        raise ValueError("global_batch=%d is smaller than the world of %d ranks: every rank needs a sample of each "
                         "step" % (global_batch, world))
    q, extra = divmod(global_batch, world)
    shares = tuple(q + (1 if r < extra else 0) for r in range(world))
    offsets = tuple(r * q + min(r, extra) for r in range(world))
    largest = shares[0]
    k = 1 if micro_batch is None else -(-largest // micro_batch)
    return StepPlan(global_batch=global_batch, world=world, micro_batches=k, shares=shares, offsets=offsets)

"""A step's micro-batches: the rank's batch cut along its first dimension into the sizes batch_plan gives, and
the learning-rate policy for runs whose global batch follows the world (lr_scaling). Used by the elastic
wrappers' micro_batches() and their rebuilds; no collective here."""
import math
from typing import Any, Optional, Sequence

import torch

LR_SCALINGS = ("none", "linear", "sqrt")


def batch_length(batch: Any) -> Optional[int]:
    """The first dimension of the first tensor of `batch` (a tensor, or a tuple, list or dict of them, as a
    DataLoader collates), or None when it holds no tensor."""
    if isinstance(batch, torch.Tensor):
        return batch.shape[0] if batch.dim() else None
    items = batch.values() if isinstance(batch, dict) else batch if isinstance(batch, (list, tuple)) else ()
    for item in items:
        n = batch_length(item)
        if n is not None:
            return n
    return None


def slice_batch(batch: Any, lo: int, hi: int) -> Any:
    """Samples lo..hi of `batch`: every tensor cut along its first dimension, the structure kept (a value that
    is no tensor stays as it is)."""
    if isinstance(batch, torch.Tensor):
        return batch[lo:hi] if batch.dim() else batch
    if isinstance(batch, dict):
        return type(batch)((k, slice_batch(v, lo, hi)) for k, v in batch.items())
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):  # a named tuple
        return type(batch)(*(slice_batch(v, lo, hi) for v in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(slice_batch(v, lo, hi) for v in batch)
    return batch


def cuts(sizes: Sequence[int]):
    """(lo, hi, samples) of each micro-batch of `sizes`: a micro-batch of no sample runs on the first sample of
    the batch (samples 0: its loss is scaled by 0)."""
    lo = 0
    for n in sizes:
        yield (lo, lo + n, n) if n else (0, 1, 0)
        lo += n


def check_lr_scaling(policy: str) -> str:
    if policy not in LR_SCALINGS:
        raise ValueError("lr_scaling=%r: one of %s" % (policy, ", ".join(repr(p) for p in LR_SCALINGS)))
    return policy


def lr_factor(policy: str, world: int, start_world: int) -> float:
    """The factor on the learning rates the run started with, for a world of `world` ranks when it started
    with `start_world` (the batch grew or shrank with the world): 'linear' W/W0, 'sqrt' sqrt(W/W0), 'none' 1."""
    if policy == "linear":
        return world / start_world
    if policy == "sqrt":
        return math.sqrt(world / start_world)
    return 1.0


def scale_lrs(optimizer: torch.optim.Optimizer, ratio: float) -> None:
    """Multiplies every parameter group's lr by `ratio` (a tensor lr in place)."""
    if ratio == 1.0:
        return
    for group in optimizer.param_groups:
        lr = group.get("lr")
        if isinstance(lr, torch.Tensor):
            lr.mul_(ratio)
        elif lr is not None:
            group["lr"] = lr * ratio

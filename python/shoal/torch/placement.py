"""Placing a saved state's storages: straight into the caller's tensors where they match (same shape,
dtype, dense, one tensor per storage), else into buffers of their own from which tensors are viewed or
copied. Shapes and dtypes are checked before any byte is written, so a mismatch writes nothing. Used by
Checkpointer.load (bytes from shared memory or a peer) and by the elastic state sync (bytes from a
broadcast)."""
from typing import Tuple

import torch

from . import state_tree


def _contiguous_strides(shape) -> Tuple[int, ...]:
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(strides))


def _is_whole_contiguous(record: state_tree.TensorRecord, nbytes: int) -> bool:
    """The record covers its whole storage, densely, from its start."""
    if record.offset != 0:
        return False
    numel = 1
    for n in record.shape:
        numel *= n
    itemsize = state_tree.itemsize(record.dtype)
    if numel * itemsize != nbytes:
        return False
    return numel <= 1 or tuple(s for s, n in zip(record.stride, record.shape) if n > 1) == \
        tuple(s for s, n in zip(_contiguous_strides(record.shape), record.shape) if n > 1)


def _box_text(shard, shape) -> str:
    if shard is None:
        return "a whole tensor %s" % list(shape)
    global_shape, offsets = shard
    return "rows %s of %s" % ("[" + ", ".join("%d:%d" % (o, o + n) for o, n in zip(offsets, shape)) + "]",
                              list(global_shape))


class Plan:
    """Where each storage of a saved state goes in one load, and what is left to do once the bytes
    arrived. `skeleton` is the saved skeleton, `sizes` the storages' byte sizes as the source holds them,
    `into` an optional state of the same structure whose tensors are filled in place, `what` names the
    source in messages."""

    def __init__(self, skeleton: bytes, sizes, into, what: str):
        self.tree, self.records, self.storages = state_tree.load_skeleton(skeleton)
        if list(sizes) != [s.nbytes for s in self.storages]:
            raise ValueError("%s: its %d buffers do not match the %d storages its structure names"
                             % (what, len(sizes), len(self.storages)))
        users = [0] * len(self.storages)
        for r in self.records:
            users[r.storage] += 1
        # The caller's tensors, checked before any byte is copied: a mismatch writes nothing.
        self.targets = [None] * len(self.records)
        self.returned = [None] * len(self.records)  # what the loaded state holds there: the caller's tensor
        problems = []
        if into is not None:
            for i, r in enumerate(self.records):
                t = state_tree.lookup(into, r.path)
                if not isinstance(t, torch.Tensor):
                    continue
                self.returned[i] = t
                if state_tree.is_distributed(t):
                    # A shard: this rank's local tensor takes the saved shard when both are the same box.
                    t, shard = state_tree.local_shard(t)
                    if r.shard != shard:
                        problems.append("%s: saved as %s, this rank holds %s (a world sharded otherwise: a load "
                                        "onto it must reshard, which Checkpointer.load does not do yet)" % (
                                            state_tree.path_text(r.path), _box_text(r.shard, r.shape),
                                            _box_text(shard, tuple(t.shape))))
                        continue
                dtype = state_tree.dtype_of(r.dtype)
                if tuple(t.shape) != tuple(r.shape) or t.dtype != dtype:
                    problems.append("%s: saved %s%s, into= has %s%s" % (
                        state_tree.path_text(r.path), r.dtype, list(r.shape),
                        state_tree.dtype_name(t.dtype), list(t.shape)))
                self.targets[i] = t
        if problems:
            raise ValueError("into= does not match %s: %s%s" % (
                what, "; ".join(problems[:5]), " (and %d more)" % (len(problems) - 5) if len(problems) > 5
                else ""))
        # A storage goes straight into the caller's tensor when that tensor is its only user and both
        # are dense; else into a buffer of its own, from which the tensors are viewed or copied.
        self.direct = [None] * len(self.storages)
        self.buffers = [None] * len(self.storages)
        for i, r in enumerate(self.records):
            t = self.targets[i]
            s = r.storage
            if (t is not None and users[s] == 1 and t.device.type == "cpu" and t.is_contiguous()
                    and _is_whole_contiguous(r, self.storages[s].nbytes)):
                self.direct[s] = t
        destinations = []
        for s, st in enumerate(self.storages):
            if self.direct[s] is not None:
                destinations.append((self.direct[s].data_ptr(), st.nbytes))
            else:
                self.buffers[s] = torch.empty(st.nbytes, dtype=torch.uint8)
                destinations.append((self.buffers[s].data_ptr(), st.nbytes) if st.nbytes else None)
        self.destinations = destinations

    def finish(self):
        """The loaded state: the caller's tensors where into= had them, new ones elsewhere."""
        tensors = []
        with torch.no_grad():
            # A storage saved from GPU memory that some tensor takes new (not into one of the caller's) goes
            # back onto the GPU, once, so that tensors sharing it still share it.
            if torch.cuda.is_available():
                for i, r in enumerate(self.records):
                    s = r.storage
                    if self.targets[i] is None and self.direct[s] is None and self.storages[s].device == "cuda" \
                            and self.buffers[s] is not None and self.buffers[s].device.type == "cpu":
                        self.buffers[s] = self.buffers[s].to(torch.cuda.current_device())
            for i, r in enumerate(self.records):
                t = self.targets[i]
                if t is not None:
                    if self.direct[r.storage] is None:
                        t.copy_(state_tree.view_of(self.buffers[r.storage], r))
                    tensors.append(self.returned[i])  # the caller's own (a DTensor stays one)
                    continue
                v = state_tree.view_of(self.buffers[r.storage], r) if self.direct[r.storage] is None \
                    else self.direct[r.storage]
                if r.parameter:
                    v = torch.nn.Parameter(v, requires_grad=r.requires_grad)
                elif r.requires_grad:
                    v.requires_grad_(True)
                tensors.append(v)
        return state_tree.rebuild(self.tree, self.records, tensors)

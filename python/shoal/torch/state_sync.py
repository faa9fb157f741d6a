"""Handing a live training state from one rank to all the others over a shoal communicator, in place:
the skeleton first, then every storage's bytes broadcast straight from the source's tensors into the
receivers' own tensors where they match (placement.Plan), or into new ones where they do not (a newcomer
whose optimizer has no state yet)."""
import struct
from typing import Any

import torch

import shoal
from . import placement, state_tree
from ._compat import storage_of


def _broadcast_bytes(comm: "shoal.Communicator", data: bytes, root: int) -> bytes:
    """`data` of root, on every rank (its length first)."""
    header = bytearray(struct.pack("<q", len(data) if comm.rank == root else 0))
    comm.broadcast(header, root)
    (n,) = struct.unpack("<q", bytes(header))
    buf = bytearray(data) if comm.rank == root else bytearray(n)
    if n:
        comm.broadcast(buf, root)
    return bytes(buf)


def _host_copy(t: torch.Tensor) -> torch.Tensor:
    """A CPU tensor on the same bytes as t's storage (Gloo moves host memory only)."""
    return t if t.device.type == "cpu" else t.detach().cpu()


def broadcast_state(comm: "shoal.Communicator", state: Any, root: int) -> Any:
    """Collective: every rank returns root's `state`. On root it is `state` itself; elsewhere the
    tensors of the local `state` are filled in place where they match what root sent (same key path,
    shape and dtype) and new tensors are made for the rest. Raises ValueError (on every rank) when a
    rank's tensor at a key path has another shape or dtype than root's, before any byte moved."""
    if comm.rank == root:
        flat = state_tree.flatten(state)
        _broadcast_bytes(comm, flat.skeleton, root)
        if not _agree(comm, True):
            raise ValueError("a rank cannot take the state of rank %d (see its error)" % root)
        for i, s in enumerate(flat.storages):
            if s.nbytes:
                src = _host_copy(flat.storage_tensors[i])
                comm.broadcast_address(storage_of(src).data_ptr(), s.nbytes, root)
        return state
    skeleton = _broadcast_bytes(comm, b"", root)
    problem = None
    try:
        _, _, storages = state_tree.load_skeleton(skeleton)
        plan = placement.Plan(skeleton, [s.nbytes for s in storages], state, "the state of rank %d" % root)
    except ValueError as e:
        problem = e
    if not _agree(comm, problem is None):
        raise problem or ValueError("a rank cannot take the state of rank %d (see its error)" % root)
    for dest, st in zip(plan.destinations, plan.storages):
        if st.nbytes:
            comm.broadcast_address(dest[0], st.nbytes, root)
    return plan.finish()


def _agree(comm: "shoal.Communicator", ok: bool) -> bool:
    """Whether every rank is ok (a min over the ranks)."""
    flag = bytearray(struct.pack("<i", 1 if ok else 0))
    comm.allreduce(memoryview(flag).cast("i"), "min")
    return struct.unpack("<i", bytes(flag))[0] == 1

"""Handing a live training state from one rank to all the others over a shoal communicator, in place:
the skeleton first, then every storage's bytes broadcast straight from the source's tensors into the
receivers' own tensors where they match (placement.Plan), or into new ones where they do not (a newcomer
whose optimizer has no state yet).

The bytes travel over the trainers' own connections, which the cluster key does not protect. So the
skeleton goes with the session's seal (a key derived from the cluster key, bound to the view, its attempt
and the sender) and a receiver checks it before it parses a byte; the skeleton is then read by
safe_pickle, which runs no code whatever it holds. Tensor bytes are not sealed (gradients on the same
connections are not either); they only ever land in tensors of the sizes the checked skeleton gives."""
import struct
from typing import Any, Optional

import torch

import shoal
from . import placement, state_tree
from ._compat import storage_of


# A skeleton (the structure and small values of a state) is kilobytes to a few megabytes; a sender that
# announces more is refused before anything is allocated.
MAX_SKELETON_BYTES = 256 << 20


def _broadcast_bytes(comm: "shoal.Communicator", data: bytes, root: int) -> bytes:
    """`data` of root, on every rank (its length first, at most MAX_SKELETON_BYTES)."""
    header = bytearray(struct.pack("<q", len(data) if comm.rank == root else 0))
    comm.broadcast(header, root)
    (n,) = struct.unpack("<q", bytes(header))
    if not 0 <= n <= MAX_SKELETON_BYTES:
        raise state_tree.SkeletonRefused("rank %d announced a state structure of %d bytes (at most %d): refused"
                                         % (root, n, MAX_SKELETON_BYTES))
    buf = bytearray(data) if comm.rank == root else bytearray(n)
    if n:
        comm.broadcast(buf, root)
    return bytes(buf)


def _host_copy(t: torch.Tensor) -> torch.Tensor:
    """A CPU tensor on the same bytes as t's storage (Gloo moves host memory only)."""
    return t if t.device.type == "cpu" else t.detach().cpu()


def broadcast_state(comm: "shoal.Communicator", state: Any, root: int,
                    session: Optional["shoal.Session"] = None) -> Any:
    """Collective: every rank returns root's `state`. On root it is `state` itself; elsewhere the
    tensors of the local `state` are filled in place where they match what root sent (same key path,
    shape and dtype) and new tensors are made for the rest. Raises ValueError (on every rank) when a
    rank's tensor at a key path has another shape or dtype than root's, or when a receiver refused what
    it was sent (state_tree.SkeletonRefused: no valid seal, or a structure safe_pickle does not admit),
    before any tensor byte moved. session: the session of `comm`, whose seal goes with the skeleton."""
    if comm.rank == root:
        flat = state_tree.flatten(state)
        seal = session.state_seal(comm, root, flat.skeleton) if session is not None else b""
        _broadcast_bytes(comm, flat.skeleton, root)
        _broadcast_bytes(comm, seal, root)
        if not _agree(comm, True):
            raise ValueError("a rank cannot take the state of rank %d (see its error)" % root)
        for i, s in enumerate(flat.storages):
            if s.nbytes:
                src = _host_copy(flat.storage_tensors[i])
                comm.broadcast_address(storage_of(src).data_ptr(), s.nbytes, root)
        return state
    skeleton = _broadcast_bytes(comm, b"", root)
    seal = _broadcast_bytes(comm, b"", root)
    problem = None
    try:
        if session is not None and not session.state_seal_valid(comm, root, skeleton, seal):
            raise state_tree.SkeletonRefused(
                "the state rank %d handed over does not carry a valid seal of the cluster key (forged, or sent by "
                "a process without the key): refused unread" % root)
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

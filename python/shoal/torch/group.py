"""shoal.torch.init_process_group(): torch.distributed's default group for the current committed view, in
one call.

    import shoal.torch
    pg = shoal.torch.init_process_group()          # under `shoal agent -- python3 train.py`
    model = torch.nn.parallel.DistributedDataParallel(model)

The ranks and world size come from the view the agents agreed on, the store from the agents (no
MASTER_ADDR, no rank-0 TCPStore), and the collectives from the session's communicator (Gloo, or NCCL where
the session was started with backend='nccl'). When the view changes, the group's collectives fail at once
with shoal.ViewChanged; call torch.distributed.destroy_process_group() and init_process_group() again for
the next view -- or let shoal.torch.Elastic do all of that, and keep the model's state, for you.
"""
import datetime
import os
from typing import Optional

import torch
import torch.distributed as dist

import shoal
from . import process_group
from .store import Store

_session: Optional["shoal.Session"] = None  # the session init_process_group() connected itself, reused


def _connected_session(backend: Optional[str]) -> "shoal.Session":
    global _session
    if _session is not None:
        return _session
    if not os.environ.get("SHOAL_CONTROL"):
        raise RuntimeError(
            "shoal.torch.init_process_group() without a session follows this host's `shoal agent`, which names "
            "itself to its workers through SHOAL_CONTROL and SHOAL_SLOT; neither is set here. Start the trainer "
            "with `shoal agent ... -- python3 train.py`, or pass session=shoal.Session.start(...) to run the agent "
            "inside this process")
    if backend is None:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    _session = shoal.Session.connect(backend=backend)
    return _session


def init_process_group(session: Optional["shoal.Session"] = None, *, backend: Optional[str] = None,
                       timeout: Optional[datetime.timedelta] = None) -> dist.ProcessGroup:
    """Sets up torch.distributed's default group for the newest committed view that includes this rank and
    returns it (a shoal.torch.ProcessGroup). Blocks until such a view exists.

    session: a shoal.Session (embedded: Session.start(...)); default: this host's `shoal agent`
    (Session.connect(), once per process). backend: for the session made here, 'gloo' or 'nccl' (default:
    'nccl' where CUDA is available). timeout: torch's default for the group's operations.

    RuntimeError when torch.distributed already has a default group (destroy it first)."""
    if dist.is_initialized():
        raise RuntimeError(
            "torch.distributed already has a default process group: call torch.distributed.destroy_process_group() "
            "before shoal.torch.init_process_group() (after a view change, that is how the next view's group is "
            "built), or let shoal.torch.Elastic build the group of every view")
    session = session if session is not None else _connected_session(backend)
    while True:
        comm = session.communicator()
        try:
            kwargs = {"rank": comm.rank, "world_size": comm.world_size}
            if timeout is not None:
                kwargs["timeout"] = timeout
            process_group.build_group(comm, Store(session, comm),
                                      lambda name, store: dist.init_process_group(name, store=store, **kwargs))
            return dist.distributed_c10d._get_default_group()
        except shoal.ViewChanged:
            if dist.is_initialized():
                dist.destroy_process_group()
            continue  # the view moved on while the group was built: build the next one

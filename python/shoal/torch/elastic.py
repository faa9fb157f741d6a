"""shoal.torch.Elastic: in-place elastic DDP. The processes of the survivors keep running when a host
fails or joins: the collective in flight fails within milliseconds (the session aborts it), the process
group and the DDP wrapper are rebuilt for the next committed view in the same process, and training goes
on. No lighthouse, no store host: the agents agree on the view and serve its store.

    job = shoal.torch.Elastic(session, model, optimizer, sampler=shoal.torch.ElasticSampler(len(data), 32))
    for batch in job.batches(data):
        with job.step():                      # a view change during the step: discarded, then redone
            loss_fn(job.model(batch)).backward()
            optimizer.step()

The same global batch whatever the world (ElasticSampler(len(data), global_batch=256, micro_batch=16)): every
step takes 256 samples, each rank its share in micro-batches of at most 16 with gradient accumulation:

    for batch in job.batches(data):
        with job.step():
            optimizer.zero_grad()
            for x, y in job.micro_batches(batch):   # DDP's no_sync() on all but the last
                job.backward(loss_fn(job.model(x), y))  # scaled: the step's gradient is the global batch's mean
            optimizer.step()

What happens to the state (shoal.SettleRule decides it, the same rule as shoal::ElasticLoop's):
- after a leave, the survivors keep their live model and optimizer. They agree on the newest step any of
  them completed; a rank that finished a step its peers did not (the failure cut the step short on some
  ranks only) hands its state to all, so a step is either applied on every rank or on none. With
  restore_after_loss=True (and a Checkpointer) every rank loads the newest complete checkpoint instead.
- after a join, the newcomer receives the live state (model, optimizer, data position, step) by a
  broadcast from a survivor; the survivors redo no step.
- at the start of the job, with no live state anywhere, a Checkpointer given to Elastic loads the
  newest complete checkpoint on every rank; without one the ranks' parameters must already agree (the
  same seed), which is checked: DDP would otherwise average different models silently.
- the data position (ElasticSampler) is part of the state, so no sample of an epoch is skipped or
  repeated when the world size changes.

Faults that a process cannot survive in place (an abort that does not return, a CUDA error) end it with
the error; under `shoal agent --workers connect` the agent starts it again, and it comes back as a
newcomer that receives the live state (or, if every rank restarted, loads the checkpoint).
"""
import contextlib
import gc
import logging
import struct
import weakref
import zlib
from typing import Any, Callable, Optional

import torch
from torch.nn.parallel import DistributedDataParallel as DDP

import shoal
from . import state_sync
from .checkpointer import Checkpointer
from .elastic_steps import _BuildAgain, ElasticSteps, ResetInfo
from .elastic_steps import is_view_change  # noqa: F401 (is_view_change: public here)
from .sampler import ElasticSampler

log = logging.getLogger("shoal.torch")

# DistributedDataParallel's constructor imports torch._dynamo on torch 2.x, 1 to 2.5 s here. Done at import,
# before a trainer joins, so that the hosts of a running job do not wait for a newcomer's first DDP after it
# joined.
if not torch.__version__.startswith("1."):
    try:
        import torch._dynamo  # noqa: F401
    except Exception:  # noqa: BLE001 (a build without it: DDP then needs nothing of it either)
        pass

def _param_hash(module: torch.nn.Module) -> int:
    crc = 0
    for p in module.parameters():
        t = p.detach()
        t = (t if t.device.type == "cpu" else t.cpu()).contiguous()
        crc = zlib.crc32(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"", crc)
    return crc


class Elastic(ElasticSteps):
    """In-place elastic data-parallel training over a shoal session (see the module's text).

    model: the plain module (Elastic wraps it in DDP for every view; use job.model for forward passes).
    optimizer: its optimizer. sampler: an ElasticSampler (the data position); optional for loops that
    bring their own data. checkpointer, ckpt_every: save a flash checkpoint every ckpt_every completed
    steps, and load the newest at the start of the job. ddp_kwargs: passed to DistributedDataParallel.
    health: node health (as shoal::ElasticLoop's): True, or a dict of shoal.HealthMonitor's keywords
    (StragglerOptions: factor, exchange_every, ...). Every step is then timed (compute outside collectives,
    wait inside them), the ranks exchange the figures every exchange_every steps and judge stragglers
    alike; job.health() gives the verdict and the session's agent is told it (`shoal health`). Every rank
    must pass the same options. restore_after_loss: with a checkpointer, load the newest checkpoint after a
    host is lost instead of keeping the survivors' live state (as shoal::ElasticLoop does when it restores);
    the state is settled by shoal.SettleRule, the rule C++'s loop follows. on_reset(info), lr_scaling: after
    every build (ElasticSteps: the state settled first, then lr_scaling, then on_reset, which wins).
    """

    def __init__(self, session: "shoal.Session", model: torch.nn.Module, optimizer: torch.optim.Optimizer, *,
                 sampler: Optional[ElasticSampler] = None, checkpointer: Optional[Checkpointer] = None,
                 ckpt_every: int = 0, ddp_kwargs: Optional[dict] = None, health: Any = None,
                 restore_after_loss: bool = False, on_reset: Optional[Callable[[ResetInfo], Any]] = None,
                 lr_scaling: str = "none"):
        if isinstance(model, DDP):
            raise TypeError("pass the plain module to shoal.torch.Elastic, not a DistributedDataParallel: "
                            "it wraps the module in DDP itself for every view")
        super().__init__(session, sampler=sampler, checkpointer=checkpointer, ckpt_every=ckpt_every,
                         health=health, what="Elastic", on_reset=on_reset, lr_scaling=lr_scaling)
        self.module = model
        self.optimizer = optimizer
        self.ddp_kwargs = dict(ddp_kwargs or {})
        self.model: Optional[DDP] = None
        self._trained_in: list = []  # the members of the view this process last trained in
        self.restore_after_loss = restore_after_loss
        # A step applied before a view change counts as completed on this rank, and the state sync rolls the
        # others forward to it.
        self._mark_steps(optimizer)

    # ---- building the world of a view ----

    def _state(self) -> dict:
        state = {"model": self.module.state_dict(), "optim": self.optimizer.state_dict(), "completed": self.completed}
        if self.sampler is not None:
            state["sampler"] = self.sampler.state_dict()
        state.update(self._run_state())
        return state

    def _adopt(self, state: dict) -> None:
        before = self.completed
        self.module.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optim"])
        self.completed = int(state["completed"])
        if self.sampler is not None and "sampler" in state:
            self.sampler.load_state_dict(state["sampler"])
        self._adopt_run_state(state)
        self._has_state = True
        self._taken(before)

    def _build_once(self) -> None:
        if self.model is not None:  # the old wrapper's hooks go with it
            old = weakref.ref(self.model)
            self.model = None
            if old() is not None:  # kept alive by a cycle: collect it (a full collection: 50-150 ms on torch 2.x)
                gc.collect()
        comm = self._enter_view()
        self._sync_state(comm)
        self._trained_in = list(self.ranks.members)
        # DDP's constructor runs collectives from C++ (the parameters' shapes, then rank 0's module state). On
        # torch 1.x a failed one returns from wait() as if it had succeeded (process_group._Work), its outputs
        # never written: a view change there surfaces as DDP's own error about what it read ("value cannot be
        # converted to type int without overflow"), or as no error at all. The aborted communicator tells.
        try:
            model = DDP(self.module, **self.ddp_kwargs)
        except Exception as e:  # noqa: BLE001 (sorted below)
            if is_view_change(e, comm):
                raise _BuildAgain(e) from e
            raise
        if comm.aborted:
            raise _BuildAgain("the view changed while DistributedDataParallel was being built")
        self.model = model

    def _sync_state(self, comm: "shoal.Communicator") -> None:
        """Every rank ends with the same state, as shoal.SettleRule decides (the rule shoal::ElasticLoop
        follows too): the newest any rank completed, or the checkpoint's."""
        members = set(self.ranks.members) if self.ranks is not None else set()
        facts = shoal.SettleFacts(
            holds_state=self._has_state, kept_peers=all(m in members for m in self._trained_in),
            next_step=self.completed + 1, can_restore=self.checkpointer is not None,
            restore_after_loss=self.restore_after_loss)
        decision = shoal.SettleRule.agree(comm, facts)
        self.restored_step = None
        if decision.restore and self._load_checkpoint(comm):
            return
        if not decision.anyone_holds_state:
            self._check_same_start(comm)
            return
        if not decision.hand_out:
            return  # every rank holds the same live state already
        log.info("shoal: rank %d hands its state of step %d to the ranks behind it", decision.source_rank,
                 decision.next_step - 1)
        self._adopt(state_sync.broadcast_state(comm, self._state(), decision.source_rank, session=self.session))

    def _load_checkpoint(self, comm: "shoal.Communicator") -> bool:
        got = self.checkpointer.load(into=self._state(), comm=comm)
        if got is None:
            return False
        step, state = got
        self._adopt(state)
        self.restored_step = step
        return True

    def _check_same_start(self, comm: "shoal.Communicator") -> None:
        # No live state and no checkpoint: the ranks start from their own initialisation, which must agree.
        mine = bytearray(struct.pack("<q", _param_hash(self.module)))
        table = bytearray(8 * comm.world_size)
        comm.allgather(mine, table)
        hashes = [struct.unpack_from("<q", table, 8 * r)[0] for r in range(comm.world_size)]
        if len(set(hashes)) != 1:
            raise RuntimeError("the model's parameters differ across ranks at the start of the job (parameter "
                               "hashes by rank: %s): DDP would average different models. Initialise them the same "
                               "way on every rank (torch.manual_seed before building the model)" %
                               ", ".join("%d: %08x" % (r, h & 0xFFFFFFFF) for r, h in enumerate(hashes)))
        self._has_state = True

    def _gradient_sync(self, enabled: bool):
        return contextlib.nullcontext() if enabled else self.model.no_sync()

    def close(self) -> None:
        """Leaves the process group (the session stays the caller's)."""
        self.model = None
        super().close()

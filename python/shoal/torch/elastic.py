"""shoal.torch.Elastic: in-place elastic DDP. The processes of the survivors keep running when a host
fails or joins: the collective in flight fails within milliseconds (the session aborts it), the process
group and the DDP wrapper are rebuilt for the next committed view in the same process, and training goes
on. No lighthouse, no store host: the agents agree on the view and serve its store.

    job = shoal.torch.Elastic(session, model, optimizer, sampler=shoal.torch.ElasticSampler(len(data), 32))
    for batch in job.batches(data):
        with job.step():                      # a view change during the step: discarded, then redone
            loss_fn(job.model(batch)).backward()
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
import time
import weakref
import zlib
from typing import Any, Callable, Iterator, Optional

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import shoal
from . import state_sync
from .checkpointer import Checkpointer
from . import process_group
from .process_group import ProcessGroup
from .sampler import ElasticSampler
from .store import Store

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


def is_view_change(error: BaseException, comm: Optional["shoal.Communicator"]) -> bool:
    """Whether `error` (raised inside a step) comes from a view change rather than from the step's code: the
    communicator was aborted (the session aborts it when the view changes; a backend aborts its own on a lost
    peer or a timeout), or the error is, or was raised from, a shoal.ViewChanged or shoal.Timeout (torch wraps
    a failed collective's error in a RuntimeError). Decided by types and state, never by message text."""
    if comm is not None and comm.aborted:
        return True
    seen = set()
    e: Optional[BaseException] = error
    while e is not None and id(e) not in seen:
        if isinstance(e, (shoal.ViewChanged, shoal.Timeout)):
            return True
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return False


class Elastic:
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
    the state is settled by shoal.SettleRule, the rule C++'s loop follows.
    """

    def __init__(self, session: "shoal.Session", model: torch.nn.Module, optimizer: torch.optim.Optimizer, *,
                 sampler: Optional[ElasticSampler] = None, checkpointer: Optional[Checkpointer] = None,
                 ckpt_every: int = 0, ddp_kwargs: Optional[dict] = None, health: Any = None,
                 restore_after_loss: bool = False):
        if isinstance(model, DDP):
            raise TypeError("pass the plain module to shoal.torch.Elastic, not a DistributedDataParallel: "
                            "it wraps the module in DDP itself for every view")
        if dist.is_initialized() and not isinstance(dist.distributed_c10d._get_default_group(), ProcessGroup):
            raise RuntimeError("torch.distributed already has a process group (init_process_group was called): "
                               "shoal.torch.Elastic builds the process group of every view itself. Remove the "
                               "init_process_group call; torch.distributed calls (all_reduce, get_rank, ...) "
                               "then work on the group Elastic builds")
        if ckpt_every and checkpointer is None:
            checkpointer = Checkpointer(session)
        self.session = session
        self.module = model
        self.optimizer = optimizer
        self.sampler = sampler
        self.checkpointer = checkpointer
        self.ckpt_every = ckpt_every
        self.ddp_kwargs = dict(ddp_kwargs or {})
        self.comm: Optional["shoal.Communicator"] = None
        self.ranks: Optional["shoal.RankInfo"] = None
        self.model: Optional[DDP] = None
        self.completed = -1  # the last step this rank completed
        self._has_state = False  # this process holds the job's live state (it trained, synced or loaded)
        self._trained_in: list = []  # the members of the view this process last trained in
        self.restore_after_loss = restore_after_loss
        self._broken_at: Optional[float] = None  # when the step in flight failed, for rebuild_ms
        self.rebuild_ms: Optional[float] = None  # the last rebuild's duration, for the caller's log
        self.restored_step: Optional[int] = None  # the checkpoint step loaded at the last build, if any
        self.rebuilds = 0
        self._health: Optional["shoal.HealthMonitor"] = None
        if health:
            self._health = shoal.HealthMonitor(session, **(health if isinstance(health, dict) else {}))
        # optimizer.step() marks the step applied: a view change after it cannot undo the update, so that
        # step counts as completed on this rank (and the state sync rolls the others forward to it).
        self._applied = False
        original_step = optimizer.step

        def step_and_mark(*args, **kwargs):
            out = original_step(*args, **kwargs)
            self._applied = True
            return out

        optimizer.step = step_and_mark

    @property
    def next_step(self) -> int:
        return self.completed + 1

    # ---- building the world of a view ----

    def _needs_build(self) -> bool:
        return self.comm is None or self.comm.aborted or self.session.latest_epoch > self.comm.epoch

    def _state(self) -> dict:
        state = {"model": self.module.state_dict(), "optim": self.optimizer.state_dict(), "completed": self.completed}
        if self.sampler is not None:
            state["sampler"] = self.sampler.state_dict()
        return state

    def _adopt(self, state: dict) -> None:
        self.module.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optim"])
        self.completed = int(state["completed"])
        if self.sampler is not None and "sampler" in state:
            self.sampler.load_state_dict(state["sampler"])
        self._has_state = True

    def _build(self) -> None:
        started = time.monotonic()
        since = self._broken_at if self._broken_at is not None else started
        while True:
            try:
                self._build_once()
                break
            except (shoal.ViewChanged, shoal.Timeout) as e:
                log.info("shoal: the view changed while building (%s); building again", e)
                continue
        first = self.rebuilds == 0 and self._broken_at is None
        self.rebuild_ms = None if first else (time.monotonic() - since) * 1000.0
        self._broken_at = None
        self.rebuilds += 0 if first else 1

    def _build_once(self) -> None:
        if self.model is not None:  # the old wrapper's hooks go with it
            old = weakref.ref(self.model)
            self.model = None
            if old() is not None:  # kept alive by a cycle: collect it (a full collection: 50-150 ms on torch 2.x)
                gc.collect()
        comm = self.session.communicator()
        if dist.is_initialized():
            dist.destroy_process_group()
        process_group.build_group(comm, Store(self.session, comm), lambda backend, store: dist.init_process_group(
            backend, store=store, rank=comm.rank, world_size=comm.world_size))
        self.comm = comm
        self.ranks = self.session.ranks()
        if self.sampler is not None:
            self.sampler.set_world(comm.rank, comm.world_size)
        self._sync_state(comm)
        self._trained_in = list(self.ranks.members)
        self.model = DDP(self.module, **self.ddp_kwargs)

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

    def ensure_world(self) -> None:
        """Builds the process group and DDP wrapper of the newest view unless they are current."""
        if self._needs_build():
            self._build()

    # ---- steps ----

    def batches(self, data, collate_fn: Optional[Callable] = None, steps: Optional[int] = None) -> Iterator[Any]:
        """Yields this rank's batch of every step (ElasticSampler's order) until `steps` steps completed
        (None: for ever), rebuilding the world between steps whenever the view changed.

        data: a torch DataLoader whose sampler is this Elastic's ElasticSampler (the user's own loader, with
        its workers, prefetching and pinned memory: after a view change or a discarded step its iterator is
        started again from the global position, for the new rank and world), or a dataset indexed here in
        the main process (collate_fn: how a list of samples becomes a batch)."""
        if self.sampler is None:
            raise ValueError("batches() needs Elastic(sampler=ElasticSampler(...))")
        if isinstance(data, torch.utils.data.DataLoader):
            yield from self._loader_batches(data, steps)
            return
        collate = collate_fn or torch.utils.data.default_collate
        while steps is None or self.next_step < steps:
            self.ensure_world()
            if steps is not None and self.next_step >= steps:
                break
            yield collate([data[i] for i in self.sampler.indices(self.comm.rank, self.comm.world_size)])

    def _check_loader(self, loader: "torch.utils.data.DataLoader") -> None:
        sampler = loader.sampler
        if sampler is not self.sampler:
            raise ValueError(
                "the DataLoader given to Elastic.batches() takes its indices from %s, not from this Elastic's "
                "ElasticSampler: build it as DataLoader(dataset, batch_size=%d, sampler=sampler) with the sampler "
                "passed to Elastic(sampler=...), so that every rank continues from one global position after a "
                "view change" % (type(sampler).__name__, self.sampler.batch_size))
        if loader.batch_size != self.sampler.batch_size or loader.drop_last:
            raise ValueError("the DataLoader's batch_size is %s, the ElasticSampler's %d: give the loader "
                             "batch_size=%d (and drop_last=False: the sampler yields whole batches only)"
                             % (loader.batch_size, self.sampler.batch_size, self.sampler.batch_size))

    def _loader_batches(self, loader, steps: Optional[int]) -> Iterator[Any]:
        self._check_loader(loader)
        sampler = self.sampler
        while steps is None or self.next_step < steps:
            self.ensure_world()
            if steps is not None and self.next_step >= steps:
                break
            world = self.comm.world_size
            sampler.set_world(self.comm.rank, world)
            sampler._fit(world)  # an epoch whose tail is shorter than a step moves on before the iterator starts
            built = self.comm
            it = iter(loader)  # starts at the sampler's position, for this rank and world
            expect = (sampler.epoch, sampler.position)
            for batch in it:
                # The position the yielded batch stands at; the caller's step advances it by one world's step.
                if (sampler.epoch, sampler.position) != expect:
                    break
                yield batch
                if steps is not None and self.next_step >= steps:
                    return
                # Go on with this iterator only while its batches are still the ones the position names: the
                # step completed in the same world. A discarded step or a new view starts a new iterator.
                if self.comm is not built or self._needs_build():
                    break
                if sampler.position + world * sampler.batch_size > sampler.dataset_size:
                    break  # the epoch's last whole step: the next iterator starts the next epoch
                expect = (expect[0], expect[1] + world * sampler.batch_size)
                if (sampler.epoch, sampler.position) != expect:
                    break
            del it

    @contextlib.contextmanager
    def step(self):
        """One training step. On a view change inside it, the step is discarded on this rank (its gradients
        dropped; nothing was applied) and the exception is swallowed: the next batches() iteration rebuilds
        and redoes it. Any other exception propagates."""
        self.ensure_world()
        comm = self.comm
        self._applied = False
        if self._health is not None:
            self._health.step_began(comm)
        try:
            yield self
        except Exception as e:  # noqa: BLE001 (sorted below)
            if not is_view_change(e, comm):
                raise
            self._broken_at = time.monotonic()
            self.optimizer.zero_grad(set_to_none=True)
            if self._applied:
                log.info("shoal: step %d was applied before the view changed (%s): it counts as done",
                         self.next_step, str(e).splitlines()[0] if str(e) else e)
                self._complete(comm, save=False)
            else:
                log.info("shoal: step %d discarded: %s", self.next_step, str(e).splitlines()[0] if str(e) else e)
            return
        if self._health is not None:
            self._health.step_ended(comm)
        self._complete(comm)
        if self._health is not None:
            try:
                self._health.completed(comm, self.completed)
            except Exception as e:  # noqa: BLE001 (sorted below)
                if not is_view_change(e, comm):
                    raise
                # The step stands; this view's figures are lost, the next view's start afresh.
                self._broken_at = time.monotonic()
                log.info("shoal: the node-health exchange after step %d failed: %s", self.completed,
                         str(e).splitlines()[0] if str(e) else e)

    def health(self) -> Optional[dict]:
        """The latest node-health verdict (shoal.HealthMonitor.health()), the same on every rank of the view;
        None when Elastic was made without health."""
        return self._health.health() if self._health is not None else None

    def _complete(self, comm: "shoal.Communicator", save: bool = True) -> None:
        if self.sampler is not None:
            self.sampler.advance(comm.world_size)
        self.completed += 1
        self._has_state = True
        if save and self.checkpointer is not None and self.ckpt_every and (self.completed + 1) % self.ckpt_every == 0:
            try:
                self.checkpointer.save(self.completed, self._state(), comm=comm)
            except shoal.ViewChanged as e:  # the view moved on after the step: this save is lost, not the step
                log.info("shoal: the checkpoint of step %d was not saved: %s", self.completed, e)

    def close(self) -> None:
        """Leaves the process group (the session stays the caller's)."""
        self.model = None
        if dist.is_initialized():
            dist.destroy_process_group()

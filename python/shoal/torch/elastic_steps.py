"""The step loop that shoal.torch.Elastic (DDP) and shoal.torch.ElasticFSDP (FSDP2) share: when to build the
world of a newer view, the batches of every step (ElasticSampler's order, the user's DataLoader), a step
that a view change discards, the count of completed steps, flash checkpoints every ckpt_every steps and the
node-health exchange, and a drain (shoal.DrainRule between two steps: every rank saves the step, a draining
rank waits until a peer holds it and its batches end, the others wait for the view without it and go on from
the same step). A subclass says how the world of a view is built (_build_once) and what its state is
(_state)."""
import contextlib
import logging
import time
from typing import Any, Callable, Iterator, Optional

import torch
import torch.distributed as dist

import shoal
from .checkpointer import Checkpointer
from . import process_group
from .process_group import ProcessGroup
from .sampler import ElasticSampler
from .store import Store

log = logging.getLogger("shoal.torch")


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


class ElasticSteps:
    """The state and step loop both elastic wrappers share (see the module's text). Not used on its own."""

    def __init__(self, session: "shoal.Session", *, sampler: Optional[ElasticSampler],
                 checkpointer: Optional[Checkpointer], ckpt_every: int, health: Any, what: str):
        if dist.is_initialized() and not isinstance(dist.distributed_c10d._get_default_group(), ProcessGroup):
            raise RuntimeError("torch.distributed already has a process group (init_process_group was called): "
                               "shoal.torch.%s builds the process group of every view itself. Remove the "
                               "init_process_group call; torch.distributed calls (all_reduce, get_rank, ...) "
                               "then work on the group it builds" % what)
        if ckpt_every and checkpointer is None:
            checkpointer = Checkpointer(session)
        self.session = session
        self.sampler = sampler
        self.checkpointer = checkpointer
        self.ckpt_every = ckpt_every
        self.comm: Optional["shoal.Communicator"] = None
        self.ranks: Optional["shoal.RankInfo"] = None
        self.completed = -1  # the last step this rank completed
        self._has_state = False  # this process holds the job's live state (it trained, synced or loaded)
        self._broken_at: Optional[float] = None  # when the step in flight failed, for rebuild_ms
        self.rebuild_ms: Optional[float] = None  # the last rebuild's duration, for the caller's log
        self.restored_step: Optional[int] = None  # the checkpoint step loaded at the last build, if any
        self.rebuilds = 0
        self._health: Optional["shoal.HealthMonitor"] = None
        if health:
            self._health = shoal.HealthMonitor(session, **(health if isinstance(health, dict) else {}))
        # optimizer.step() marks the step applied: a view change after it cannot undo the update, so that
        # step counts as completed on this rank.
        self._applied = False
        self._saved = -1  # the last completed step whose flash checkpoint this rank saved
        self.drained = False  # this rank's host drained: its batches have ended (see _drain_boundary)
        self.drain_safe: Optional[bool] = None  # at the drain: a peer held the last step's checkpoint
        self.discarded = 0  # steps a view change cut short on this rank (they run again)
        self.steps_redone = 0  # completed steps a rebuild went back behind (a restore of an older step)

    def _mark_steps(self, optimizer: torch.optim.Optimizer) -> None:
        """Wraps optimizer.step so that a call marks the step in flight applied."""
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
        raise NotImplementedError

    def _build_once(self) -> None:
        raise NotImplementedError

    def _enter_view(self, before_group: Optional[Callable[[], None]] = None) -> "shoal.Communicator":
        """The start of every build: the communicator of the newest view, torch.distributed's group rebuilt on
        it (before_group runs between the old group's end and the new one's start), comm, ranks and the
        sampler's world set. Returns the communicator."""
        comm = self.session.communicator()
        if dist.is_initialized():
            dist.destroy_process_group()
        if before_group is not None:
            before_group()
        process_group.build_group(comm, Store(self.session, comm), lambda backend, store: dist.init_process_group(
            backend, store=store, rank=comm.rank, world_size=comm.world_size))
        self.comm = comm
        self.ranks = self.session.ranks()
        if self.sampler is not None:
            self.sampler.set_world(comm.rank, comm.world_size)
        return comm

    def _checkpoint_step(self) -> int:
        """The step number the flash checkpoint of the step just completed is saved as."""
        return self.completed

    def _build(self) -> None:
        started = time.monotonic()
        since = self._broken_at if self._broken_at is not None else started
        # Every build after this process's first is a rebuild, also one whose view change was seen between
        # steps (no step failed): counting only failed steps left `rebuilds` unchanged there, and a caller that
        # runs a collective on the first step of each world ran it on some ranks only.
        first = self.comm is None
        before = self.completed
        while True:
            try:
                self._build_once()
                break
            except (shoal.ViewChanged, shoal.Timeout) as e:
                log.info("shoal: the view changed while building (%s); building again", e)
                continue
        if not first and self.completed < before:
            self.steps_redone += before - self.completed
        self.rebuild_ms = None if first else (time.monotonic() - since) * 1000.0
        self._broken_at = None
        self.rebuilds += 0 if first else 1

    def ensure_world(self) -> None:
        """Builds the process group and DDP wrapper of the newest view unless they are current."""
        if self._needs_build():
            self._build()

    # ---- steps ----

    def batches(self, data, collate_fn: Optional[Callable] = None, steps: Optional[int] = None) -> Iterator[Any]:
        """Yields this rank's batch of every step (ElasticSampler's order) until `steps` steps completed
        (None: for ever), rebuilding the world between steps whenever the view changed.

        data: a torch DataLoader whose sampler is this wrapper's ElasticSampler (the user's own loader, with
        its workers, prefetching and pinned memory: after a view change or a discarded step its iterator is
        started again from the global position, for the new rank and world), or a dataset indexed here in
        the main process (collate_fn: how a list of samples becomes a batch)."""
        if self.sampler is None:
            raise ValueError("batches() needs %s(sampler=ElasticSampler(...))" % type(self).__name__)
        if isinstance(data, torch.utils.data.DataLoader):
            yield from self._loader_batches(data, steps)
            return
        collate = collate_fn or torch.utils.data.default_collate
        while (steps is None or self.next_step < steps) and not self.drained:
            self.ensure_world()
            if steps is not None and self.next_step >= steps:
                break
            yield collate([data[i] for i in self.sampler.indices(self.comm.rank, self.comm.world_size)])

    def _check_loader(self, loader: "torch.utils.data.DataLoader") -> None:
        sampler = loader.sampler
        what = type(self).__name__
        if sampler is not self.sampler:
            raise ValueError(
                "the DataLoader given to %s.batches() takes its indices from %s, not from this %s's "
                "ElasticSampler: build it as DataLoader(dataset, batch_size=%d, sampler=sampler) with the sampler "
                "passed to %s(sampler=...), so that every rank continues from one global position after a "
                "view change" % (what, type(sampler).__name__, what, self.sampler.batch_size, what))
        if loader.batch_size != self.sampler.batch_size or loader.drop_last:
            raise ValueError("the DataLoader's batch_size is %s, the ElasticSampler's %d: give the loader "
                             "batch_size=%d (and drop_last=False: the sampler yields whole batches only)"
                             % (loader.batch_size, self.sampler.batch_size, self.sampler.batch_size))

    def _loader_batches(self, loader, steps: Optional[int]) -> Iterator[Any]:
        self._check_loader(loader)
        sampler = self.sampler
        while (steps is None or self.next_step < steps) and not self.drained:
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
                if (steps is not None and self.next_step >= steps) or self.drained:
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
                self.discarded += 1
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
                return
        self._drain_boundary(comm)

    def _drain_boundary(self, comm: "shoal.Communicator") -> None:
        """Between two steps: whether a host drains, agreed by every rank (shoal.DrainRule, the rule C++'s
        ElasticLoop calls). If one does, every rank saves the step just completed (when it checkpoints); a
        draining rank waits until a peer holds it, tells its agent and ends its batches (`drained`); the others
        wait for the view without the draining host, so that no step is in flight when it leaves."""
        mine = self.session.drain_requested
        try:
            decision = shoal.DrainRule.agree(comm, mine)
        except Exception as e:  # noqa: BLE001 (sorted below)
            if not is_view_change(e, comm):
                raise
            self._broken_at = time.monotonic()
            return
        if not decision.drain:
            return
        ckpt_step = self._checkpoint_step()
        if self.checkpointer is not None and self._saved != self.completed:
            try:
                self.checkpointer.save(ckpt_step, self._state(), comm=comm)
                self._saved = self.completed
            except shoal.ViewChanged as e:
                log.info("shoal: the drain's checkpoint of step %d was not saved: %s", self.completed, e)
        if mine:
            self.drain_safe = (self.checkpointer is not None
                               and self.session.wait_checkpoint_safe(ckpt_step, shoal.DrainRule.wait))
            if self.checkpointer is not None and not self.drain_safe:
                log.warning("shoal: drain: no peer holds the checkpoint of step %d after %.0f s; leaving anyway",
                            self.completed, shoal.DrainRule.wait)
            self.session.report_drained(ckpt_step)
            self.drained = True
            log.info("shoal: drained after step %d", self.completed)
            return
        if decision.everyone:
            return
        try:
            # Until every draining host is out (hosts that drain together may leave in more than one view).
            deadline = time.monotonic() + shoal.DrainRule.wait
            ranks = self.session.wait_for_view(comm.epoch, shoal.DrainRule.wait)
            while ranks.world_size > comm.world_size - decision.draining_ranks and time.monotonic() < deadline:
                ranks = self.session.wait_for_view(ranks.epoch, max(0.001, deadline - time.monotonic()))
        except shoal.Timeout:
            log.warning("shoal: drain: the draining host did not leave within %.0f s; training on",
                        shoal.DrainRule.wait)

    def health(self) -> Optional[dict]:
        """The latest node-health verdict (shoal.HealthMonitor.health()), the same on every rank of the view;
        None when the wrapper was made without health."""
        return self._health.health() if self._health is not None else None

    def _complete(self, comm: "shoal.Communicator", save: bool = True) -> None:
        if self.sampler is not None:
            self.sampler.advance(comm.world_size)
        self.completed += 1
        self._has_state = True
        if save and self.checkpointer is not None and self.ckpt_every and (self.completed + 1) % self.ckpt_every == 0:
            try:
                self.checkpointer.save(self._checkpoint_step(), self._state(), comm=comm)
                self._saved = self.completed
            except shoal.ViewChanged as e:  # the view moved on after the step: this save is lost, not the step
                log.info("shoal: the checkpoint of step %d was not saved: %s", self.completed, e)

    def close(self) -> None:
        """Leaves the process group (the session stays the caller's)."""
        if dist.is_initialized():
            dist.destroy_process_group()

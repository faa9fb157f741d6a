"""The step loop that shoal.torch.Elastic (DDP) and shoal.torch.ElasticFSDP (FSDP2) share: when to build the
world of a newer view, the batches of every step (ElasticSampler's order, the user's DataLoader), a step
that a view change discards, the count of completed steps, flash checkpoints every ckpt_every steps and the
node-health exchange, a drain (shoal.DrainRule between two steps: every rank saves the step, a draining
rank waits until a peer holds it and its batches end, the others wait for the view without it and go on from
the same step); the micro-batches of a step with gradient accumulation (a global batch whatever the world:
batch_plan), on_reset after every build, and what the run lost (run_stats, told to the agent). A subclass says how the world of
a view is built (_build_once), what its state is (_state) and how gradient sync is held back
(_gradient_sync)."""
import contextlib
import logging
import time
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional

import torch
import torch.distributed as dist

import shoal
from .checkpointer import Checkpointer
from . import accumulation, process_group
from .batch_plan import StepPlan
from .process_group import ProcessGroup
from .run_stats import ElasticStats, RunStats, StatsReporter
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


@dataclass(frozen=True)
class ResetInfo:
    """What on_reset is told after a build of a view's world, its state settled (see ElasticSteps).

    old_world: the world size this process last trained in (None: it had not trained yet: the job's start, or
    a newcomer); new_world, rank: this view's; epoch, attempt: the view's epoch and its build attempt;
    next_step: the step the loop runs next; restored_step: the training step a checkpoint restore loaded
    (None: no restore); rebuilds: the wrapper's count of rebuilds so far (0 at the first build)."""
    old_world: Optional[int]
    new_world: int
    rank: int
    epoch: int
    attempt: int
    next_step: int
    restored_step: Optional[int]
    rebuilds: int


class _BuildAgain(Exception):
    """A view change inside on_reset: build the newest view's world again."""


class _StaleBatch(Exception):
    """micro_batches() of a batch that batches() cut for the world before the one step() entered: the step is
    discarded as if the view had changed inside it, and the next batch is cut for the new world."""


def _callable_name(f: Callable) -> str:
    return getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or repr(f)


class ElasticSteps:
    """The state and step loop both elastic wrappers share (see the module's text). Not used on its own.

    on_reset(info: ResetInfo), if given, runs on the training thread after every build of a view's world (the
    first included) once the state is settled, before the next step. The order is fixed: the restore or the
    hand-over of the state first (which brings the optimizer's saved hyperparameters with it), then
    lr_scaling's factor, then on_reset, so what on_reset sets (a learning rate, a scheduler, optimizer
    hyperparameters) stands for the whole view. An on_reset that raises stops the run: this rank's
    communicator is aborted (its peers fail their next collective at once rather than wait for it) and a
    RuntimeError naming on_reset, raised from its error, leaves batches()/step()/ensure_world(). A view change
    inside on_reset (a collective of its own) builds again and calls it again.

    lr_scaling: for a batch that changes with the world (ElasticSampler's batch_size): after every build whose
    world differs from the one the current factor was computed for, every parameter group's lr is multiplied
    so that it stands at 'linear' W/W0 or 'sqrt' sqrt(W/W0) times the rate the run started with (W0: the world
    of the job's first build, kept in the state); 'none' (the default) leaves it. A scheduler that sets lr from
    its base_lrs undoes it at its next step: scale in on_reset instead. With a global_batch sampler the batch
    does not change: ValueError."""

    def __init__(self, session: "shoal.Session", *, sampler: Optional[ElasticSampler],
                 checkpointer: Optional[Checkpointer], ckpt_every: int, health: Any, what: str,
                 on_reset: Optional[Callable[[ResetInfo], Any]] = None, lr_scaling: str = "none"):
        if dist.is_initialized() and not isinstance(dist.distributed_c10d._get_default_group(), ProcessGroup):
            raise RuntimeError("torch.distributed already has a process group (init_process_group was called): "
                               "shoal.torch.%s builds the process group of every view itself. Remove the "
                               "init_process_group call; torch.distributed calls (all_reduce, get_rank, ...) "
                               "then work on the group it builds" % what)
        if on_reset is not None and not callable(on_reset):
            raise TypeError("on_reset must be callable (on_reset(info: shoal.torch.ResetInfo)); got %s"
                            % type(on_reset).__name__)
        accumulation.check_lr_scaling(lr_scaling)
        if lr_scaling != "none" and sampler is not None and sampler.global_batch is not None:
            raise ValueError("lr_scaling=%r with ElasticSampler(global_batch=%d): the global batch does not change "
                             "with the world, so neither does the learning rate" % (lr_scaling, sampler.global_batch))
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
        self.on_reset = on_reset
        self.lr_scaling = lr_scaling
        self._start_world: Optional[int] = None  # the world of the job's first build (lr_scaling)
        self._lr_factor = 1.0  # the lr_scaling factor the optimizer's learning rates stand at
        self._last_world: Optional[int] = None  # the world this process last trained in
        self._comm_ready = False  # the build in progress got its communicator (see _build)
        self._micro_scale: Optional[float] = None  # the loss scale of the micro-batch in progress
        self._micro_state: Optional[str] = None  # None, "running", "done": this step's micro_batches()
        self._yielded_for = None  # the communicator whose world batches() cut its latest batch for
        self._stale_batch = False  # step() rebuilt the world after that batch was cut
        self._run = RunStats()
        report_run = getattr(session, "report_run", None)
        self._reporter = StatsReporter(report_run if report_run is not None else (lambda figures: None))
        run = weakref.ref(self._run)
        session.on_view_change(lambda epoch: run() is not None and run().view_committed(epoch))

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
        self._comm_ready = True
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
        self._run.loop_started()
        started = time.monotonic()
        since = self._broken_at if self._broken_at is not None else started
        # Every build after this process's first is a rebuild, also one whose view change was seen between
        # steps (no step failed): counting only failed steps left `rebuilds` unchanged there, and a caller that
        # runs a collective on the first step of each world ran it on some ranks only.
        first = self.comm is None
        before = self.completed
        while True:
            self._comm_ready = False
            try:
                self._build_once()
                self._after_settle(first)
                break
            except (shoal.ViewChanged, _BuildAgain) as e:
                log.info("shoal: the view changed while building (%s); building again", e)
                continue
            except shoal.Timeout as e:
                # shoal::ElasticLoop's rule: communicator()'s Timeout (no usable view within view_timeout) ends
                # the run; a peer that never came to the settle gives this communicator up, and communicator()
                # builds again (for the same view when every member lives).
                if not self._comm_ready:
                    raise
                log.info("shoal: the rebuild timed out (%s); building again", e)
                self.comm.abort("the rebuild timed out: %s" % e)
        if not first and self.completed < before:
            self.steps_redone += before - self.completed
        self.rebuild_ms = None if first else (time.monotonic() - since) * 1000.0
        self._broken_at = None
        self.rebuilds += 0 if first else 1
        self._run.built(since, self.comm.epoch, first)

    def _after_settle(self, first: bool) -> None:
        """lr_scaling, then on_reset (see the class's text), once the state of the new world is settled."""
        world = self.comm.world_size
        if self._start_world is None:
            self._start_world = world
        if self.lr_scaling != "none":
            factor = accumulation.lr_factor(self.lr_scaling, world, self._start_world)
            accumulation.scale_lrs(self._optimizer(), factor / self._lr_factor)
            self._lr_factor = factor
        if self.on_reset is not None:
            info = ResetInfo(old_world=self._last_world, new_world=world, rank=self.comm.rank,
                             epoch=self.ranks.epoch, attempt=self.ranks.attempt, next_step=self.next_step,
                             restored_step=self.restored_step, rebuilds=self.rebuilds + (0 if first else 1))
            try:
                self.on_reset(info)
            except Exception as e:  # noqa: BLE001 (sorted below)
                if is_view_change(e, self.comm):
                    raise _BuildAgain(e) from e
                self.comm.abort("on_reset raised: %s" % e)
                raise RuntimeError("shoal.torch.%s: on_reset=%s raised %s: %s; the run stops (this rank's "
                                   "communicator was aborted)" % (type(self).__name__, _callable_name(self.on_reset),
                                                                  type(e).__name__, e)) from e
        self._last_world = world

    def _optimizer(self) -> torch.optim.Optimizer:
        return self.optimizer

    def _run_state(self) -> dict:
        """What the state carries for lr_scaling (empty without it, so that a state stays as it always was)."""
        if self.lr_scaling == "none":
            return {}
        return {"run": {"start_world": self._start_world, "lr_factor": self._lr_factor}}

    def _adopt_run_state(self, state: dict) -> None:
        run = state.get("run") if isinstance(state, dict) else None
        if self.lr_scaling != "none" and run:
            self._start_world = int(run["start_world"]) if run.get("start_world") else self._start_world
            self._lr_factor = float(run["lr_factor"])

    def _taken(self, before: int) -> None:
        """The state was replaced (a restore or a hand-over): `before` was this rank's last completed step."""
        self._run.state_taken(before, self.completed)

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
        the main process (collate_fn: how a list of samples becomes a batch). With a global_batch sampler a
        batch is this rank's share of the step: job.micro_batches(batch) cuts it. When it ends, a one-line
        summary of stats() goes to the "shoal.torch" logger (INFO), and the figures to the session's agent."""
        if self.sampler is None:
            raise ValueError("batches() needs %s(sampler=ElasticSampler(...))" % type(self).__name__)
        self._run.loop_started()
        try:
            if isinstance(data, torch.utils.data.DataLoader):
                yield from self._loader_batches(data, steps)
                return
            collate = collate_fn or torch.utils.data.default_collate
            while (steps is None or self.next_step < steps) and not self.drained:
                self.ensure_world()
                if steps is not None and self.next_step >= steps:
                    break
                self._yielded_for = self.comm
                yield collate([data[i] for i in self.sampler.indices(self.comm.rank, self.comm.world_size)])
        finally:
            stats = self.stats()
            self._reporter.ended(stats)
            log.info("shoal: %s run: %s", type(self).__name__, stats.summary())

    def _check_loader(self, loader: "torch.utils.data.DataLoader") -> None:
        sampler = loader.sampler
        what = type(self).__name__
        if self.sampler.global_batch is not None:
            if loader.batch_sampler is not self.sampler:
                raise ValueError(
                    "the DataLoader given to %s.batches() does not take its batches from this %s's ElasticSampler "
                    "(global_batch=%d): build it as DataLoader(dataset, batch_sampler=sampler) with the sampler passed "
                    "to %s(sampler=...): each step's share of a rank is one batch" % (
                        what, what, self.sampler.global_batch, what))
            return
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
            step_size = sampler.step_size(world)
            sampler.set_world(self.comm.rank, world)
            sampler._fit(world)  # an epoch whose tail is shorter than a step moves on before the iterator starts
            built = self.comm
            it = iter(loader)  # starts at the sampler's position, for this rank and world
            expect = (sampler.epoch, sampler.position)
            for batch in it:
                # The position the yielded batch stands at; the caller's step advances it by one world's step.
                if (sampler.epoch, sampler.position) != expect:
                    break
                self._yielded_for = built
                yield batch
                if (steps is not None and self.next_step >= steps) or self.drained:
                    return
                # Go on with this iterator only while its batches are still the ones the position names: the
                # step completed in the same world. A discarded step or a new view starts a new iterator.
                if self.comm is not built or self._needs_build():
                    break
                if sampler.position + step_size > sampler.dataset_size:
                    break  # the epoch's last whole step: the next iterator starts the next epoch
                expect = (expect[0], expect[1] + step_size)
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
        self._micro_state = None
        self._stale_batch = self._yielded_for is not None and self._yielded_for is not comm
        self._run.step_began()
        if self._health is not None:
            self._health.step_began(comm)
        try:
            yield self
        except Exception as e:  # noqa: BLE001 (sorted below)
            if not (isinstance(e, _StaleBatch) or is_view_change(e, comm)):
                raise
            if not isinstance(e, _StaleBatch):  # (the world was rebuilt before this step: no failure to time)
                self._broken_at = time.monotonic()
            self.optimizer.zero_grad(set_to_none=True)
            if self._applied:
                log.info("shoal: step %d was applied before the view changed (%s): it counts as done",
                         self.next_step, str(e).splitlines()[0] if str(e) else e)
                self._complete(comm, save=False)
            else:
                self.discarded += 1
                log.info("shoal: step %d discarded: %s", self.next_step, str(e).splitlines()[0] if str(e) else e)
                self._run.step_discarded()
            return
        finally:
            self._micro_scale = None
        if self._micro_state == "running":
            raise RuntimeError("step %d ended in the middle of job.micro_batches(batch): every rank must run all of "
                               "a step's micro-batches (their collectives line up), so do not leave that loop early"
                               % self.next_step)
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
        samples = 0
        if self.sampler is not None:
            samples = self.sampler.step_size(comm.world_size)
            self.sampler.advance(comm.world_size)
        self.completed += 1
        self._has_state = True
        self._run.step_completed(self.completed, samples)
        self._reporter.step_completed(self._run.snapshot)
        if save and self.checkpointer is not None and self.ckpt_every and (self.completed + 1) % self.ckpt_every == 0:
            began = time.monotonic()
            try:
                self.checkpointer.save(self._checkpoint_step(), self._state(), comm=comm)
                self._saved = self.completed
            except shoal.ViewChanged as e:  # the view moved on after the step: this save is lost, not the step
                log.info("shoal: the checkpoint of step %d was not saved: %s", self.completed, e)
            finally:
                self._run.saved(time.monotonic() - began)

    # ---- micro-batches: a global batch whatever the world ----

    def step_plan(self) -> Optional[StepPlan]:
        """How the current world splits a step (the sampler's batch_plan.StepPlan), or None without a sampler."""
        if self.comm is None:
            self.ensure_world()
        return self.sampler.plan(self.comm.world_size) if self.sampler is not None else None

    def micro_batches(self, batch: Any) -> Iterator[Any]:
        """This rank's micro-batches of a step, for use inside job.step(): cuts `batch` (this rank's batch from
        batches(): a tensor, or a tuple, list or dict of them) along its first dimension into the sizes of
        batch_plan.plan_step, the same count on every rank, and holds the gradients' sync back on all but the
        last (DDP's no_sync(), FSDP2's set_requires_gradient_sync(False)). Call job.backward(loss) once per
        micro-batch, loss being the mean over its samples: it is scaled so that the step's gradient is the mean
        over the whole global batch. A rank whose share is shorter than the count gets a zero-weight micro-batch
        (one of its samples, loss scaled by 0). With a batch_size sampler (or none): one micro-batch, the whole
        batch, scale 1. Do not leave the loop early: the ranks' collectives would not line up."""
        if self._stale_batch:
            raise _StaleBatch("the view changed after this batch was cut for the world before it")
        plan = self.step_plan()
        rank = self.comm.rank
        if plan is None or self.sampler.global_batch is None:
            sizes, scale = None, (lambda n: 1.0)
        else:
            sizes, scale = plan.sizes(rank), plan.loss_scale
            have = accumulation.batch_length(batch)
            if have != plan.shares[rank]:
                raise ValueError("micro_batches(): rank %d's share of a step of global_batch=%d over %d ranks is %d "
                                 "samples; the batch given has %s" % (rank, plan.global_batch, plan.world,
                                                                      plan.shares[rank], have))
        self._micro_state = "running"
        try:
            if sizes is None:
                self._micro_scale = 1.0
                yield batch
            else:
                cuts = list(accumulation.cuts(sizes))
                for i, (lo, hi, n) in enumerate(cuts):
                    self._micro_scale = scale(n)
                    with self._gradient_sync(i == len(cuts) - 1):
                        yield accumulation.slice_batch(batch, lo, hi)
            self._micro_state = "done"
        finally:
            self._micro_scale = None

    def backward(self, loss: torch.Tensor, **kwargs) -> None:
        """loss.backward() for the micro-batch in progress, the loss scaled as micro_batches() says."""
        if self._micro_scale is None:
            raise RuntimeError("job.backward(loss) goes inside `for part in job.micro_batches(batch):` (it scales the "
                               "micro-batch's loss); outside one call loss.backward()")
        (loss * self._micro_scale).backward(**kwargs)

    def _gradient_sync(self, enabled: bool):
        """A context in which the backward passes sync the gradients across ranks (enabled) or only accumulate
        them locally."""
        raise NotImplementedError

    def stats(self) -> ElasticStats:
        """What the run lost so far (run_stats.ElasticStats: steps discarded, redone and rolled back, seconds
        of startup, rebuild, stall, save and lost steps, samples trained, ETTR), this process's count. The
        session's agent is told it after the first step, then every 10 s or so and when batches() ends
        (`shoal status`, its /metrics)."""
        return self._run.snapshot()

    def close(self) -> None:
        """Leaves the process group (the session stays the caller's)."""
        if dist.is_initialized():
            dist.destroy_process_group()

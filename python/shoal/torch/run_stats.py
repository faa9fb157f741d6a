"""What an elastic run lost, counted on the training thread of shoal.torch.Elastic and ElasticFSDP: the steps
discarded, redone and rolled back, the seconds spent starting, rebuilding, stalled for a view and saving, the
samples trained, and the productive-time fraction (ETTR). RunStats is the accounting (its clock handed in, so it
is tested with a fake one); ElasticStats is the figures a caller reads (job.stats()), with stable field names.

Definitions (per process; wall time starts when the loop first builds a world or yields a batch):
- a step is discarded when a view change cut it short before its update was applied (it is then done again
  under the same number); it is redone when it completes under a number this process had completed before (a
  restore took the state back to an older step); steps_rolled_back counts the completed steps a restore undid;
- startup_s: the first build of a world (waiting for the first view included); rebuild_s: every later build,
  from the failure of the step it replaces (or from its own start when the view changed between steps) to the
  rebuilt world's first step, less stall_s: the part of it spent before the view it built was committed (the
  wait for the membership to remove a lost host, or to admit a new one); save_s: flash checkpoints' saves;
- lost_step_s: the time inside discarded and redone steps;
- productive_s = wall_s - (startup_s + rebuild_s + stall_s + save_s + lost_step_s), ettr = productive_s / wall_s;
- samples_trained: the samples of the global order taken by the steps completed for the first time (a redone
  step's samples are counted once), over all ranks.

StatsReporter tells the session's agent (Session.report_run): after the first completed step, then at most every
`every_s` seconds, and when batches() ends; `shoal status` shows each local rank's latest figures and the agent's
/metrics exports them (shoal_trainer_*, by rank).
"""
import logging
import time
from dataclasses import asdict, dataclass
from typing import Callable, Dict, Optional


@dataclass(frozen=True)
class ElasticStats:
    steps_completed: int
    steps_discarded: int
    steps_redone: int
    steps_rolled_back: int
    rebuilds: int
    samples_trained: int
    startup_s: float
    rebuild_s: float
    stall_s: float
    save_s: float
    lost_step_s: float
    wall_s: float
    productive_s: float
    ettr: float

    def as_dict(self) -> Dict[str, float]:
        return asdict(self)

    def summary(self) -> str:
        """One line for a log."""
        return ("%d steps (%d samples), %d rebuilds; steps discarded %d, redone %d, rolled back %d; seconds: "
                "startup %.2f, rebuild %.2f, stall %.2f, save %.2f, lost steps %.2f, wall %.2f; ETTR %.3f" % (
                    self.steps_completed, self.samples_trained, self.rebuilds, self.steps_discarded,
                    self.steps_redone, self.steps_rolled_back, self.startup_s, self.rebuild_s, self.stall_s,
                    self.save_s, self.lost_step_s, self.wall_s, self.ettr))


class RunStats:
    """The accounting behind ElasticStats (see the module's text). Not thread-safe but for view_committed(),
    which the session's thread calls (it writes one dict entry)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self.started: Optional[float] = None
        self.steps_completed = self.steps_discarded = self.steps_redone = self.steps_rolled_back = 0
        self.rebuilds = self.samples_trained = 0
        self.startup_s = self.rebuild_s = self.stall_s = self.save_s = self.lost_step_s = 0.0
        self.done_high = -1  # the highest step number this process completed
        self._step_began: Optional[float] = None
        self._step_save_s = 0.0
        self._committed: Dict[int, float] = {}  # view epoch -> when this process learnt it was committed

    def loop_started(self) -> None:
        if self.started is None:
            self.started = self.clock()

    def view_committed(self, epoch: int) -> None:
        self._committed[epoch] = self.clock()
        if len(self._committed) > 64:
            del self._committed[min(self._committed)]

    def built(self, since: float, epoch: int, first: bool) -> None:
        """A build of the world of view `epoch` that began (or whose failed step failed) at `since` is done."""
        now = self.clock()
        total = max(0.0, now - since)
        if first:
            self.startup_s += total
            return
        committed = self._committed.get(epoch)
        stall = min(total, max(0.0, committed - since)) if committed is not None else 0.0
        self.stall_s += stall
        self.rebuild_s += total - stall
        self.rebuilds += 1

    def step_began(self) -> None:
        self._step_began = self.clock()
        self._step_save_s = 0.0

    def saved(self, seconds: float) -> None:
        self.save_s += seconds
        self._step_save_s += seconds

    def _step_seconds(self) -> float:
        if self._step_began is None:
            return 0.0
        return max(0.0, self.clock() - self._step_began - self._step_save_s)

    def step_discarded(self) -> None:
        self.steps_discarded += 1
        self.lost_step_s += self._step_seconds()
        self._step_began = None

    def step_completed(self, step: int, samples: int) -> None:
        """Step number `step`, of `samples` samples of the global order, completed on this rank."""
        self.steps_completed += 1
        if step <= self.done_high:
            self.steps_redone += 1
            self.lost_step_s += self._step_seconds()
        else:
            self.samples_trained += samples
            self.done_high = step
        self._step_began = None

    def state_taken(self, before: int, after: int) -> None:
        """The last completed step went from `before` to `after` by a restore or a hand-over (a newcomer's jump
        forward is no loss; a restore to an older step rolls back the steps between)."""
        if after < before:
            self.steps_rolled_back += before - after
        self.done_high = max(self.done_high, after)

    def snapshot(self) -> ElasticStats:
        wall = self.clock() - self.started if self.started is not None else 0.0
        lost = self.startup_s + self.rebuild_s + self.stall_s + self.save_s + self.lost_step_s
        productive = max(0.0, wall - lost)
        return ElasticStats(
            steps_completed=self.steps_completed, steps_discarded=self.steps_discarded,
            steps_redone=self.steps_redone, steps_rolled_back=self.steps_rolled_back, rebuilds=self.rebuilds,
            samples_trained=self.samples_trained, startup_s=self.startup_s, rebuild_s=self.rebuild_s,
            stall_s=self.stall_s, save_s=self.save_s, lost_step_s=self.lost_step_s, wall_s=wall,
            productive_s=productive, ettr=productive / wall if wall > 0 else 0.0)


class StatsReporter:
    """When the loop tells the agent its figures (see the module's text). `send` takes ElasticStats.as_dict()
    (Session.report_run, which hands it on without waiting for the agent); a failure is logged once at WARNING
    (later ones at DEBUG) and never stops training."""

    def __init__(self, send: Callable[[Dict[str, float]], None], every_s: float = 10.0,
                 clock: Callable[[], float] = time.monotonic):
        self.send = send
        self.every_s = every_s
        self.clock = clock
        self.sent = 0
        self._last: Optional[float] = None
        self._failed = False

    def step_completed(self, stats: Callable[[], ElasticStats]) -> None:
        now = self.clock()
        if self._last is None or now - self._last >= self.every_s:
            self._report(stats(), now)

    def ended(self, stats: ElasticStats) -> None:
        self._report(stats, self.clock())

    def _report(self, stats: ElasticStats, now: float) -> None:
        self._last = now
        try:
            self.send(stats.as_dict())
            self.sent += 1
        except Exception as e:  # noqa: BLE001 (an agent's trouble is no reason to stop training)
            log = logging.getLogger("shoal.torch")
            if not self._failed:
                log.warning("shoal: could not tell the agent what the run lost (later failures at DEBUG): %s", e)
            else:
                log.debug("shoal: could not tell the agent what the run lost: %s", e)
            self._failed = True

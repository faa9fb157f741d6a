"""shoal.torch.Checkpointer: flash checkpoints of any PyTorch state in this host's shared memory,
replicated by the agent to peer hosts.

    ckpt = shoal.torch.Checkpointer()              # this worker's agent (under `shoal agent -- ...`)
    got = ckpt.load()                              # None, or (step, state) every rank agrees on
    if got:
        step, state = got
        model.load_state_dict(state["model"]); optimizer.load_state_dict(state["optim"])
    for step in range(start, steps):
        train_one_step()
        ckpt.save(step, {"model": model.state_dict(), "optim": optimizer.state_dict(), "step": step})

save() copies each tensor's bytes once, straight into shared memory, checksumming them in the same
pass, and returns; the agent replicates the version to a peer host (and persists it with --ckpt-dir) in
the background. load() is collective: every rank of the current world calls it, and they all load the
newest step that every rank of its world saved completely and that some host still holds -- this
host's memory first, else a peer's replica, else the persist directory (through the agent).
"""
import atexit
import logging
import threading
import weakref
from typing import Any, Dict, Optional, Tuple

import torch

import shoal
from . import placement, reshard_load, shard_safety, state_tree
from ._compat import storage_of

log = logging.getLogger("shoal.torch")

META = "meta"


def _storage_name(i: int) -> str:
    return "s%d" % i


class Checkpointer:
    """Flash checkpoints of a training state through a shoal session.

    session: a shoal.Session; default Session.connect() (this worker's `shoal agent`, found through
    SHOAL_CONTROL and SHOAL_SLOT). safe_timeout: how long a normal exit waits for the last save to be
    safe (replicated, and persisted with --ckpt-dir); 0 does not wait.
    """

    def __init__(self, session: Optional["shoal.Session"] = None, *, safe_timeout: float = 60.0):
        self._own_session = session is None
        self._session = session if session is not None else shoal.Session.connect()
        self._comm = None
        self._lock = threading.Lock()
        self._pending = None  # (thread, result, step, flat) of a save whose copy is in flight
        self.last_saved: Optional[int] = None  # the step of the newest save that returned
        # The last load's shoal.RestoredCheckpoint: step, source ("local" or the peer), seconds.
        self.last_load: Optional["shoal.RestoredCheckpoint"] = None
        # The last load resharded onto another world: reshard_load.read_stats' dict (bytes and seconds of
        # the reads from this host's memory and from peers, the whole load's seconds).
        self.last_reshard: Optional[Dict[str, Any]] = None
        self.safe_timeout = safe_timeout
        if safe_timeout > 0:
            ref = weakref.ref(self)
            atexit.register(lambda: ref() is not None and ref()._at_exit())

    @property
    def session(self) -> "shoal.Session":
        return self._session

    def communicator(self) -> "shoal.Communicator":
        """The communicator of the current view that saves and loads name their rank and world by."""
        if self._comm is None or self._comm.aborted:
            self._comm = self._session.communicator()
        return self._comm

    def prepare(self, state: Any, comm: Optional["shoal.Communicator"] = None) -> None:
        """Readies shared memory for saves of a state shaped like `state`, in the background: the first
        save of a size otherwise writes into memory the kernel clears page by page at first touch
        (several times the copy's cost). Call it before training starts; each save readies the memory of
        the next one itself."""
        flat = state_tree.flatten(state)
        # The skeleton's size moves a little with the values in it (the step): leave it room.
        buffers = [(META, len(flat.skeleton) + 65536)] + \
            [(_storage_name(i), s.nbytes) for i, s in enumerate(flat.storages)]
        with self._lock:
            self._session.prepare_save(comm or self.communicator(), buffers)

    def save(self, step: int, state: Any, comm: Optional["shoal.Communicator"] = None, *,
             fence: Optional[torch.optim.Optimizer] = None) -> None:
        """Saves `state` (a nest of dicts, lists and tuples of tensors and picklable values) as this
        rank's checkpoint of `step`, and returns once its bytes are in shared memory. Every rank saves
        every step it wants restorable. TypeError names the key path of a value that is neither a
        tensor nor picklable; shoal.Error says why shared memory could not take it (the earlier step
        stays intact). comm: the communicator whose rank and world the save is made as (default: the
        session's current one).

        fence=optimizer takes the copy of what that optimizer updates (its parameters and their state)
        off the caller's path: it runs on a thread of its own while the next forward and backward pass
        run, and the optimizer's next step() waits for it, so the snapshot is still the state of `step`.
        Everything else in `state` (buffers, which a forward pass may change; plain values) is copied
        before save returns. The next save, load or wait() waits for the copy too; an error in it is
        raised there."""
        flat = state_tree.flatten(state)
        buffers = [(META, len(flat.skeleton))] + [(_storage_name(i), s.nbytes) for i, s in enumerate(flat.storages)]
        self._finish_pending()
        comm = comm or self.communicator()
        if comm.world_size > 1 and shard_safety.is_sharded(flat.records):
            refusal = shard_safety.sharded_save_refusal(True, self._session.checkpoint_replicas,
                                                        self._session.ranks().members)
            if refusal is not None:
                raise shoal.Error("checkpoint of step %d refused: %s" % (int(step), refusal))
        protected = self._fenced_storages(fence) if fence is not None else set()
        with self._lock:
            save = self._session.begin_save(comm, int(step), buffers)
            try:
                save.write(META, flat.skeleton)
                now, later = [], []
                for i, s in enumerate(flat.storages):
                    if s.device == "cuda":
                        t = flat.storage_tensors[i]
                        stream = torch.cuda.current_stream(t.device).cuda_stream
                        save.write_from_device(_storage_name(i), flat.storage_address(i), stream)
                        continue
                    part = (_storage_name(i), flat.storage_address(i), s.nbytes)
                    (later if flat.storage_address(i) in protected else now).append(part)
                save.write_many(now)
                if not later:
                    save.commit()
                    self.last_saved = int(step)
                    return
            except BaseException:
                save.abandon()
                raise
        # The optimizer's tensors, copied while the caller computes; `flat` keeps them alive meanwhile.
        pending = {"error": None}

        def copy_and_commit():
            try:
                save.write_many(later)
                save.commit()
            except BaseException as e:  # noqa: BLE001 (raised on the caller's thread, at the fence)
                save.abandon()
                pending["error"] = e

        thread = threading.Thread(target=copy_and_commit, name="shoal-ckpt-copy", daemon=True)
        self._pending = (thread, pending, int(step), flat)
        thread.start()

    def _fenced_storages(self, optimizer: torch.optim.Optimizer) -> set:
        """The storages `optimizer.step()` writes: its parameters' and their state's. Wraps its step() once
        so that it waits for a copy in flight first."""
        if getattr(optimizer, "_shoal_fenced_by", None) is not self:
            original = optimizer.step

            def step_after_copy(*args, **kwargs):
                self._finish_pending()
                return original(*args, **kwargs)

            optimizer.step = step_after_copy
            optimizer._shoal_fenced_by = self
        out = set()
        for group in optimizer.param_groups:
            for p in group["params"]:
                out.add(storage_of(p).data_ptr())
        for per_param in optimizer.state.values():
            for v in per_param.values():
                if isinstance(v, torch.Tensor):
                    out.add(storage_of(v).data_ptr())
        return out

    def _finish_pending(self) -> None:
        """Waits for a save's copy in flight (save(fence=...)); raises what it raised."""
        pending, self._pending = self._pending, None
        if pending is None:
            return
        thread, result, step, _ = pending
        thread.join()
        if result["error"] is not None:
            raise result["error"]
        self.last_saved = step

    def load(self, into: Any = None, comm: Optional["shoal.Communicator"] = None,
             saved_rank: Optional[int] = None) -> Optional[Tuple[int, Any]]:
        """Collective: (step, state) of the newest step every rank of the current world can load, or
        None when no step is complete. With into= (a state of the same structure, e.g. the model's and
        optimizer's state_dict()), each saved tensor is copied in place into the caller's tensor at the
        same key path; shapes and dtypes are checked first, and a mismatch raises ValueError naming the
        tensor with nothing written. Tensors missing from into= come back as new tensors. saved_rank
        (given on every rank): load that rank's version instead of the one this rank's host saved, from
        the newest step every rank of its world completed.
        When into= holds DTensors (FSDP2's state) and the step was saved by a world of another size, each
        rank reads only the parts of the saved shards that overlap its own (resharding N -> M), local
        memory first; every tensor's table of saved chunks and into='s names, global shapes and dtypes are
        checked first (ValueError naming the tensor, nothing written), and plain values come from saved
        rank 0's version (or saved_rank's). into= must hold the optimizer's state tensors already (e.g.
        after one step), as their DTensors give each rank's new shard. When a chunk of that step fails
        verification on every host that holds it, every rank learns it after the reads and all load the next
        older step whose every chunk is held instead (reshard_load.load_resharded_or_older: the older step's
        reads overwrite whatever the failed attempt wrote; with no older step, FileNotFoundError and into='s
        sharded tensors are undefined)."""
        self._finish_pending()
        if into is not None and reshard_load.holds_dtensor(into):
            comm = comm or self.communicator()
            with self._lock:
                point = self._session.agree_restore(comm)
                if point is None:
                    return None
                if point.saved_world != comm.world_size:
                    stats: Dict[str, Any] = {}
                    got = reshard_load.load_resharded_or_older(self._session, comm, point, into, saved_rank, stats)
                    self.last_reshard = stats
                    log.info("shoal: loaded step %d resharded from a world of %d onto %d", got[0],
                             point.saved_world, comm.world_size)
                    return got
        result = {}

        def place(layout):
            entries = layout.entries
            if not entries or entries[0][0] != META:
                raise ValueError("the checkpoint of step %d was not saved by shoal.torch.Checkpointer "
                                 "(its first buffer is %r)" % (layout.step, entries[0][0] if entries else None))
            names = [e[0] for e in entries[1:]]
            if names != [_storage_name(i) for i in range(len(names))]:
                raise ValueError("the checkpoint of step %d has buffers %s after its structure, not s0, s1, ..."
                                 % (layout.step, names[:4]))
            try:
                result["plan"] = placement.Plan(layout.first, [s for _, _, s in entries[1:]], into,
                                                "the checkpoint of step %d" % layout.step)
            except state_tree.SkeletonRefused as e:
                # Never parsed into code: this copy is refused, and the restore tries the next one, then an
                # older step.
                log.warning("shoal: the copy of step %d from %s was refused: %s", layout.step, layout.source, e)
                raise shoal.VersionRefused("the checkpoint of step %d from %s: %s"
                                           % (layout.step, layout.source, e)) from e
            return [None] + result["plan"].destinations

        with self._lock:
            restored = self._session.restore_into(comm or self.communicator(), place, saved_rank)
        if restored is None:
            return None
        self.last_load = restored
        state = result["plan"].finish()
        log.info("shoal: loaded step %d (saved rank %d of %d) from %s in %.3f s", restored.step, restored.saved_rank,
                 restored.saved_world, restored.source, restored.seconds)
        return restored.step, state

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Blocks until the newest save is safe: held by the peers replica placement names and, with a
        persist directory, written there. False at timeout or when nothing was saved."""
        self._finish_pending()
        if self.last_saved is None:
            return False
        return self._session.wait_checkpoint_safe(self.last_saved, self.safe_timeout if timeout is None else timeout)

    def close(self) -> None:
        """Waits for the last save to be safe (up to safe_timeout), then leaves a session it started."""
        self._at_exit()
        if self._own_session:
            self._session.leave()

    def _at_exit(self):
        try:
            self._finish_pending()
        except BaseException as e:  # noqa: BLE001
            log.warning("shoal: the last checkpoint's copy failed: %s", e)
        if self.last_saved is None or self.safe_timeout <= 0:
            return
        step, timeout = self.last_saved, self.safe_timeout
        self.safe_timeout = 0  # once
        try:
            if not self._session.wait_checkpoint_safe(step, timeout):
                log.warning("shoal: the checkpoint of step %d was not safe (replicated/persisted) before exit", step)
        except shoal.Error as e:
            log.warning("shoal: could not learn whether the checkpoint of step %d is safe: %s", step, e)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

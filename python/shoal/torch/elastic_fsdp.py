"""shoal.torch.ElasticFSDP: in-place elastic FSDP2 (fully_shard). The survivors of a lost host, and the
hosts a newcomer joins, keep their processes: at every view change the process group is rebuilt for the
new view in the same process, a 1-D DeviceMesh is made over it, the user's build(mesh) shards a new model
and makes its optimizer, and every rank loads the newest complete flash checkpoint into it, resharded from
the saved world of N onto the new world of M straight from the hosts' memory (a newcomer's shards come from
the survivors' memory). With a flash checkpoint every step (the default) no step every survivor completed is
lost; a step only some ranks finished, or whose copy from the lost host had not reached a peer yet, is done
again from the step before it (with the same samples).

    def build(mesh):                                   # called again at every view change
        model = Net()
        for block in model.blocks:
            fully_shard(block, mesh=mesh)
        fully_shard(model, mesh=mesh)
        return model, torch.optim.AdamW(model.parameters(), lr=1e-3)

    job = shoal.torch.ElasticFSDP(session, build, sampler=shoal.torch.ElasticSampler(len(data), 32))
    for batch in job.batches(data):
        with job.step():                               # a view change during the step: discarded, redone
            job.optimizer.zero_grad()
            loss_fn(job.model(batch)).backward()
            job.optimizer.step()

What happens to the state:
- at every build the newest checkpoint every rank of its world saved completely is loaded (Checkpointer.load
  with into=: names, global shapes and dtypes are checked against the new model before a byte is written;
  a state of another model, or a mesh that cannot hold it, raises ValueError naming the tensor). The
  model's and optimizer's tensors, the optimizer's hyperparameters, the step count and the data position
  (the ElasticSampler's, global) come from it, so no sample of an epoch is skipped or repeated. The
  checkpoints are numbered by view epoch, attempt and step (checkpoint_step), so that a restore never
  prefers a version of a step that an older view did and a newer view did again.
- the optimizer's state must exist before it can be loaded into (AdamW makes it at its first step):
  ElasticFSDP gives it its state tensors with one step at learning rate 0 on zero gradients (no
  parameter changes, nothing is communicated), and empties the state again when no checkpoint exists.
- at the start of the job, with no checkpoint, the ranks keep what build(mesh) made; they must have built
  it alike (the same seed), which is checked cheaply: every rank's random generator state after
  build(mesh) is compared (FSDP2 would otherwise train a model stitched from different initialisations).
  build(mesh) always runs with torch's CPU generator as it was when ElasticFSDP was made (and the
  caller's generator is put back afterwards), so a later build makes the same initial model too.

Use job.model and job.optimizer inside the loop and keep no reference to them across steps: after a view
change they are new objects (the old ones hold the old process group).
"""
import contextlib
import gc
import logging
import struct
import weakref
import zlib
from typing import Any, Callable, Optional, Tuple

import torch

import shoal
from . import state_tree
from .checkpointer import Checkpointer
from .elastic_steps import ElasticSteps, ResetInfo
from .sampler import ElasticSampler

log = logging.getLogger("shoal.torch")


def materialize_optimizer_state(optimizer: torch.optim.Optimizer) -> None:
    """Gives `optimizer` the state tensors it makes lazily at its first step, without changing a parameter:
    one step at learning rate 0 on zero gradients, after which each parameter's values (a copy taken before,
    for optimizers whose step moves a parameter even so), its gradient and the learning rates are put back.
    Parameters that already have state are left as they are. Nothing is communicated (the step's arithmetic
    on DTensors is per shard)."""
    params = [p for g in optimizer.param_groups for p in g["params"] if p.requires_grad]
    if all(optimizer.state.get(p) for p in params):
        return
    grads = [p.grad for p in params]
    lrs = [g.get("lr") for g in optimizer.param_groups]
    with torch.no_grad():
        values = [p.detach().clone() for p in params]
    try:
        for p in params:
            p.grad = torch.zeros_like(p)
        for g in optimizer.param_groups:
            if isinstance(g.get("lr"), torch.Tensor):
                g["lr"] = g["lr"].clone().fill_(0.0)
            elif "lr" in g:
                g["lr"] = 0.0
        with torch.no_grad():
            optimizer.step()
    finally:
        with torch.no_grad():
            for p, v, grad in zip(params, values, grads):
                p.copy_(v)
                p.grad = grad
        for g, lr in zip(optimizer.param_groups, lrs):
            if lr is not None:
                g["lr"] = lr


def forget_old_meshes() -> None:
    """Empties DTensor's caches of sharding decisions. A DeviceMesh compares equal to another over the same
    ranks whatever this process's coordinate in it, so after a rebuild a cached decision made on an old mesh
    (where this process had another rank) would hand an in-place op's result that old mesh, and every offset
    computed from it would be another rank's (a wrong shard saved and loaded)."""
    try:
        from torch.distributed.tensor.debug import _clear_sharding_prop_cache
        _clear_sharding_prop_cache()
    except ImportError:  # an older torch: its Python cache only
        from torch.distributed.tensor import DTensor
        DTensor._op_dispatcher.sharding_propagator.propagate_op_sharding.cache_clear()
    try:
        from torch.distributed.tensor._redistribute import clear_redistribute_planner_cache
        clear_redistribute_planner_cache()
    except ImportError:
        pass


def _leaves(obj, path):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _leaves(v, path + (k,))
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from _leaves(v, path + (i,))
    else:
        yield path, obj


def check_meshes(state, mesh) -> None:
    """RuntimeError naming the first DTensor of `state` whose mesh gives this process another coordinate
    than `mesh` (a stale sharding decision, see forget_old_meshes): its offsets would be another rank's."""
    want = mesh.get_coordinate()
    for path, t in _leaves(state, ()):
        if state_tree.is_distributed(t) and t.device_mesh is not mesh and t.device_mesh.get_coordinate() != want:
            raise RuntimeError("%s: its DeviceMesh puts this rank at %s, the view's mesh at %s (a mesh of an earlier "
                               "view): its shard would be saved as another rank's" % (
                                   state_tree.path_text(path), t.device_mesh.get_coordinate(), want))


# A checkpoint's step number: the view's epoch and attempt above the training step. A restore can go back to
# an earlier step (a save some rank did not finish), and the steps after it are then done again in the new
# view; their old versions (of another world, another batch split) stay on the hosts. The restore takes the
# newest complete step number, so numbering the saves of a newer view higher keeps it on the line of the
# current training: an old line's version of step s never outranks the new line's.
EPOCH_SHIFT, ATTEMPT_SHIFT, STEP_MASK = 40, 32, (1 << 32) - 1


def checkpoint_step(epoch: int, attempt: int, step: int) -> int:
    """The number a step's flash checkpoint is saved as (see above); ValueError past the ranges it holds."""
    if not (0 <= step <= STEP_MASK and 0 <= epoch < (1 << 23)):
        raise ValueError("ElasticFSDP numbers its checkpoints by view epoch (< 2^23) and step (< 2^32): epoch %d, "
                         "step %d" % (epoch, step))
    return (epoch << EPOCH_SHIFT) | (min(attempt, 255) << ATTEMPT_SHIFT) | step


def _rng_digest() -> int:
    return zlib.crc32(torch.get_rng_state().numpy().tobytes())


class ElasticFSDP(ElasticSteps):
    """In-place elastic FSDP2 training over a shoal session (see the module's text).

    build: build(mesh) -> (model, optimizer): makes the module, calls fully_shard on it with the given 1-D
    DeviceMesh (the view's world) and makes its optimizer; called at the start and again at every view
    change. sampler: an ElasticSampler (the data position). checkpointer, ckpt_every: a flash checkpoint
    every ckpt_every completed steps (at least 1; 1 loses no step at a view change). device_type: the
    DeviceMesh's device ("cpu" with the shoal backend's Gloo). health: as Elastic's. on_reset(info): after
    every build, once the checkpoint is loaded (which brings the saved hyperparameters): what it sets wins.
    With a global_batch sampler, job.micro_batches(batch) holds FSDP2's gradient reduction back
    (set_requires_gradient_sync(False)) on all but a step's last micro-batch.
    """

    def __init__(self, session: "shoal.Session", build: Callable[[Any], Tuple[torch.nn.Module, torch.optim.Optimizer]],
                 *, sampler: Optional[ElasticSampler] = None, checkpointer: Optional[Checkpointer] = None,
                 ckpt_every: int = 1, device_type: str = "cpu", health: Any = None,
                 on_reset: Optional[Callable[[ResetInfo], Any]] = None):
        if not callable(build):
            raise TypeError("shoal.torch.ElasticFSDP takes build(mesh) -> (model, optimizer), a function it calls "
                            "at every view change; got %s" % type(build).__name__)
        if not isinstance(ckpt_every, int) or ckpt_every < 1:
            raise ValueError("shoal.torch.ElasticFSDP needs flash checkpoints (ckpt_every >= 1, got %r): after a "
                             "view change every rank loads the newest one into the newly sharded model" % (ckpt_every,))
        try:
            from torch.distributed.device_mesh import init_device_mesh
        except ImportError as e:
            raise RuntimeError("shoal.torch.ElasticFSDP needs FSDP2 (fully_shard) and DeviceMesh: torch 2.6 or "
                               "newer; this is torch %s" % torch.__version__) from e
        super().__init__(session, sampler=sampler, checkpointer=checkpointer, ckpt_every=ckpt_every,
                         health=health, what="ElasticFSDP", on_reset=on_reset)
        self._init_device_mesh = init_device_mesh
        self.build = build
        self.device_type = device_type
        self.model: Optional[torch.nn.Module] = None
        self.optimizer: Optional[torch.optim.Optimizer] = None
        self.mesh = None
        self._build_rng = torch.get_rng_state()  # every build(mesh) starts from this generator state
        self._sampler_start = sampler.state_dict() if sampler is not None else None

    def _state(self) -> dict:
        state = {"model": self.model.state_dict(), "optim": self.optimizer.state_dict(), "completed": self.completed}
        if self.sampler is not None:
            state["sampler"] = self.sampler.state_dict()
        check_meshes(state, self.mesh)  # before it is saved or loaded into: every shard is this rank's
        return state

    def _checkpoint_step(self) -> int:
        return checkpoint_step(self.ranks.epoch, self.ranks.attempt, self.completed)

    def _call_build(self, mesh) -> Tuple[torch.nn.Module, torch.optim.Optimizer, int]:
        caller_rng = torch.get_rng_state()
        torch.set_rng_state(self._build_rng)
        try:
            got = self.build(mesh)
            digest = _rng_digest()
        finally:
            torch.set_rng_state(caller_rng)
        if not (isinstance(got, tuple) and len(got) == 2 and isinstance(got[0], torch.nn.Module)
                and isinstance(got[1], torch.optim.Optimizer)):
            raise TypeError("build(mesh) must return (model, optimizer): a torch.nn.Module sharded with "
                            "fully_shard and its torch.optim.Optimizer; it returned %s" % type(got).__name__)
        return got[0], got[1], digest

    def _build_once(self) -> None:
        if self.model is not None:  # the old model and optimizer hold the old view's process group
            old = weakref.ref(self.model)
            self.model = self.optimizer = self.mesh = None
            if old() is not None:  # kept alive by a cycle: collect it
                gc.collect()
        comm = self._enter_view(before_group=forget_old_meshes)
        self.mesh = self._init_device_mesh(self.device_type, (comm.world_size,))
        model, optimizer, digest = self._call_build(self.mesh)
        materialize_optimizer_state(optimizer)
        self._mark_steps(optimizer)
        self.model, self.optimizer = model, optimizer
        self.restored_step = None
        got = self.checkpointer.load(into=self._state(), comm=comm)
        if got is not None:
            self._adopt(*got)
            return
        optimizer.state.clear()  # as the optimizer would be before its first step
        if self._has_state:
            log.warning("shoal: no complete checkpoint after the view changed (the failure came before the first "
                        "save): training starts again from step 0 with the model build(mesh) made")
        before, self.completed = self.completed, -1
        self._taken(before)
        if self.sampler is not None:
            self.sampler.load_state_dict(self._sampler_start)
            self.sampler.set_world(comm.rank, comm.world_size)
        self._check_same_start(comm, digest)

    def _adopt(self, step: int, state: dict) -> None:
        # The tensors were loaded in place; the optimizer's hyperparameters (a schedule's lr) and the plain
        # values come from the saved state.
        saved_groups = state["optim"].get("param_groups", [])
        if len(saved_groups) != len(self.optimizer.param_groups):
            raise ValueError("the checkpoint of step %d has %d optimizer parameter groups, the optimizer build(mesh) "
                             "made has %d" % (int(state["completed"]), len(saved_groups),
                                              len(self.optimizer.param_groups)))
        for saved, group in zip(saved_groups, self.optimizer.param_groups):
            for key, value in saved.items():
                if key != "params":
                    group[key] = value
        before = self.completed
        self.completed = int(state["completed"])
        self._taken(before)
        if self.sampler is not None and "sampler" in state:
            self.sampler.load_state_dict(state["sampler"])
            self.sampler.set_world(self.comm.rank, self.comm.world_size)
        self.restored_step = self.completed  # the training step (`step` is the checkpoint's number, see above)
        self._has_state = True

    def _check_same_start(self, comm: "shoal.Communicator", digest: int) -> None:
        mine = bytearray(struct.pack("<q", digest))
        table = bytearray(8 * comm.world_size)
        comm.allgather(mine, table)
        digests = [struct.unpack_from("<q", table, 8 * r)[0] for r in range(comm.world_size)]
        if len(set(digests)) != 1:
            raise RuntimeError("the ranks built their models from different random states at the start of the job "
                               "(generator digests by rank: %s): FSDP2 would train a model stitched from different "
                               "initialisations. Seed alike on every rank (torch.manual_seed before making "
                               "ElasticFSDP) and draw no rank-dependent random numbers in build(mesh)" %
                               ", ".join("%d: %08x" % (r, d & 0xFFFFFFFF) for r, d in enumerate(digests)))
        self._has_state = True

    @contextlib.contextmanager
    def _gradient_sync(self, enabled: bool):
        sync = getattr(self.model, "set_requires_gradient_sync", None)
        if sync is None:  # not an FSDP2 module at its root: nothing to hold back
            yield
            return
        sync(enabled)
        try:
            yield
        finally:
            if not enabled:
                sync(True)

    def close(self) -> None:
        """Leaves the process group (the session stays the caller's)."""
        self.model = self.optimizer = self.mesh = None
        super().close()

"""Loading a sharded state onto a world of another size (Checkpointer.load with into= holding DTensors):
agree on a step, read every saved rank's skeleton, build each tensor's table of saved chunks and check it
(whole, no overlaps, the same names, global shapes and dtypes as into=) before a byte is written, then
read into each local shard only the byte runs that overlap it (reshard.plan_world), straight from the
holders' memory through Session.read_ranges: this host's memory first, then the peers'. Plain values come
from one saved rank's version (rank 0 unless the caller names another)."""
import array
import concurrent.futures
import logging
import time
from typing import Any, Dict, List, Optional, Tuple

import torch

import shoal
from . import reshard, state_tree

log = logging.getLogger("shoal.torch")

META = "meta"
# A skeleton larger than this is refused before memory is allocated for it: a state's structure (names,
# shapes, small values) is kilobytes to a few megabytes, never this.
MAX_SKELETON_BYTES = 256 << 20
# Saved ranks read at once (each read one connection to its holder, or a copy from this host's memory).
MAX_READ_THREADS = 16


def _storage_name(i: int) -> str:
    return "s%d" % i


def holds_dtensor(obj) -> bool:
    """Whether a nest of dicts, lists and tuples holds a DTensor anywhere."""
    if state_tree.is_distributed(obj):
        return True
    if isinstance(obj, dict):
        return any(holds_dtensor(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return any(holds_dtensor(v) for v in obj)
    return False


class _Saved:
    """One saved rank's version: its skeleton, parsed through state_tree's restricted path."""

    def __init__(self, session, step: int, rank: int):
        table = session.version_buffers(step, rank)
        what = "saved rank %d's version of step %d" % (rank, step)
        if not table or table[0][0] != META:
            raise ValueError("%s was not saved by shoal.torch.Checkpointer (its first buffer is %r)"
                             % (what, table[0][0] if table else None))
        names = [n for n, _ in table[1:]]
        if names != [_storage_name(i) for i in range(len(names))]:
            raise ValueError("%s has buffers %s after its structure, not s0, s1, ..." % (what, names[:4]))
        size = table[0][1]
        if size > MAX_SKELETON_BYTES:
            raise shoal.VersionRefused("%s: a structure of %d bytes (at most %d)" % (what, size, MAX_SKELETON_BYTES))
        meta = torch.empty(size, dtype=torch.uint8)
        if size:
            session.read_ranges(step, rank, [(META, 0, size, meta.data_ptr())])
        try:
            self.tree, self.records, self.storages = state_tree.load_skeleton(meta.numpy().tobytes())
        except state_tree.SkeletonRefused as e:
            raise shoal.VersionRefused("%s: %s" % (what, e)) from e
        if [n for _, n in table[1:]] != [s.nbytes for s in self.storages]:
            raise shoal.VersionRefused("%s: its buffers do not match the storages its structure names" % what)
        self.rank = rank


def concurrently(fn, keys: List[int]) -> list:
    """[fn(k) for k in keys], concurrently when there are several (each call a read that releases the GIL);
    the first failure is raised once every call ended, so that no read is still writing when it is."""
    if len(keys) <= 1:
        return [fn(k) for k in keys]
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(len(keys), MAX_READ_THREADS)) as pool:
        futures = [pool.submit(fn, k) for k in keys]
        concurrent.futures.wait(futures)
        return [f.result() for f in futures]


def _dense_from_start(r: state_tree.TensorRecord) -> bool:
    """The record's elements are its storage's bytes from r.offset on, row-major, with no gaps."""
    acc = 1
    for n, s in zip(reversed(r.shape), reversed(r.stride)):
        if n > 1 and s != acc:
            return False
        acc *= n
    return True


def _tensor_tables(saved: List[_Saved]) -> Dict[Tuple, dict]:
    """{path: {"shape", "dtype", "chunks": [Chunk], "sources": [(saved rank, record)]}} of every sharded
    tensor; ValueError naming the tensor for saved ranks that disagree or a table that is not whole."""
    tables: Dict[Tuple, dict] = {}
    for s in saved:
        for r in s.records:
            if r.shard is None:
                continue
            name = state_tree.path_text(r.path)
            global_shape, offsets = r.shard
            if not _dense_from_start(r):
                raise ValueError("%s: saved rank %d's shard is not dense in its storage; it cannot be resharded"
                                 % (name, s.rank))
            t = tables.setdefault(r.path, {"shape": global_shape, "dtype": r.dtype, "chunks": [], "sources": []})
            if t["shape"] != global_shape or t["dtype"] != r.dtype:
                raise ValueError("%s: saved ranks disagree on it (%s%s against %s%s)" % (
                    name, t["dtype"], list(t["shape"]), r.dtype, list(global_shape)))
            t["chunks"].append(reshard.Chunk(tuple(offsets), tuple(r.shape)))
            t["sources"].append((s.rank, r))
    for path, t in tables.items():
        problems = reshard.check_cover(state_tree.path_text(path), t["shape"], t["chunks"])
        if problems:
            raise ValueError("the checkpoint's shards do not make up the tensor: %s" % "; ".join(problems[:5]))
    return tables


def read_stats(step: int, saved_world: int, began: float, reads: List[Tuple[int, str, int, float, float]],
               ended: float) -> Dict[str, Any]:
    """What a resharded load's reads came to, as this rank saw them (Checkpointer.last_reshard): reads is
    [(saved rank, source, bytes asked, perf_counter at its start, at its end)] of the read_ranges calls, which
    run concurrently. local_* are the calls answered from this host's memory (source "local"), remote_* those
    a peer's agent served; each *_s is the wall time from the first such call's start to the last one's end
    (0.0 when there was none); total_s is the whole load, from `began` (before the skeletons) to `ended`."""
    def part(calls):
        if not calls:
            return 0, 0.0
        return sum(c[2] for c in calls), max(c[4] for c in calls) - min(c[3] for c in calls)
    local_bytes, local_s = part([c for c in reads if c[1] == "local"])
    remote_bytes, remote_s = part([c for c in reads if c[1] != "local"])
    return {"step": step, "saved_world": saved_world, "total_s": ended - began,
            "local_bytes": local_bytes, "local_s": local_s, "remote_bytes": remote_bytes, "remote_s": remote_s,
            "reads": [{"saved_rank": r, "source": src, "bytes": n, "seconds": t1 - t0}
                      for r, src, n, t0, t1 in sorted(reads)]}


def load_resharded(session, comm, point, into: Any, plain_rank: Optional[int] = None,
                   stats: Optional[Dict[str, Any]] = None) -> Tuple[int, Any]:
    """(step, state) of `point` (Session.agree_restore's answer) loaded into `into`'s DTensors resharded for
    this rank of `comm`. Every check runs before a byte is written into the caller's tensors; a read that
    fails later (every copy refused) may leave some of them filled with the saved bytes, others not. A dict
    given as stats is filled with read_stats' account of the load once it succeeded."""
    began = time.perf_counter()
    step, world = point.step, point.saved_world
    plain_rank = 0 if plain_rank is None else int(plain_rank)
    if not 0 <= plain_rank < world:
        raise ValueError("saved_rank %d did not exist at step %d (world %d)" % (plain_rank, step, world))
    saved = concurrently(lambda r: _Saved(session, step, r), list(range(world)))
    tables = _tensor_tables(saved)

    # into=: every sharded tensor of the checkpoint must be a DTensor there, and every DTensor of into=
    # one of the checkpoint's, with the same global shape and dtype.
    targets: Dict[Tuple, Any] = {}
    boxes: Dict[str, reshard.Chunk] = {}
    specs: Dict[str, Tuple[Tuple[int, ...], int, List[reshard.Chunk]]] = {}
    problems = []
    flat_into = state_tree.flatten(into)
    for rec in flat_into.records:
        if rec.shard is not None and rec.path not in tables:
            problems.append("%s: into= holds a sharded tensor the checkpoint does not (another model?)"
                            % state_tree.path_text(rec.path))
    for path, t in tables.items():
        name = state_tree.path_text(path)
        target = state_tree.lookup(into, path)
        if target is None or not state_tree.is_distributed(target):
            problems.append("%s: saved sharded, into= has %s there" % (
                name, "nothing" if target is None else type(target).__name__))
            continue
        local, (global_shape, offsets) = state_tree.local_shard(target)
        if tuple(global_shape) != tuple(t["shape"]) or state_tree.dtype_name(local.dtype) != t["dtype"]:
            problems.append("%s: saved %s%s, into= has %s%s" % (name, t["dtype"], list(t["shape"]),
                                                                   state_tree.dtype_name(local.dtype),
                                                                   list(global_shape)))
            continue
        targets[path] = (target, local)
        boxes[name] = reshard.Chunk(tuple(offsets), tuple(local.shape))
        specs[name] = (tuple(t["shape"]), state_tree.itemsize(t["dtype"]), t["chunks"])
    base = saved[plain_rank]
    plain = []  # (record, caller's tensor or None) of the plain tensors, from saved rank plain_rank
    for r in base.records:
        if r.shard is not None:
            continue
        t = state_tree.lookup(into, r.path)
        if isinstance(t, torch.Tensor) and not state_tree.is_distributed(t):
            if tuple(t.shape) != tuple(r.shape) or state_tree.dtype_name(t.dtype) != r.dtype:
                problems.append("%s: saved %s%s, into= has %s%s" % (
                    state_tree.path_text(r.path), r.dtype, list(r.shape), state_tree.dtype_name(t.dtype),
                    list(t.shape)))
                continue
        else:
            t = None
        plain.append((r, t))
    if problems:
        raise ValueError("into= does not match the checkpoint of step %d: %s%s" % (
            step, "; ".join(problems[:5]), " (and %d more)" % (len(problems) - 5) if len(problems) > 5 else ""))
    plans = reshard.plan_world(specs, boxes)  # ValueError naming the tensor and the range left uncovered

    # The reads, per saved rank: each new shard's byte runs straight into its local tensor where that is
    # dense CPU memory, else into a buffer copied in afterwards.
    ranges: Dict[int, List[Tuple[str, int, int, int]]] = {}
    staged = []  # (local tensor, buffer) for shards read into a buffer first
    for path, (target, local) in targets.items():
        name = state_tree.path_text(path)
        if local.numel() == 0:
            continue
        if local.device.type == "cpu" and local.is_contiguous():
            dst = local.data_ptr()
        else:
            buf = torch.empty(local.numel() * local.element_size(), dtype=torch.uint8)
            staged.append((local, buf))
            dst = buf.data_ptr()
        sources = tables[path]["sources"]
        size = state_tree.itemsize(tables[path]["dtype"])
        for read in plans[name]:
            rank, rec = sources[read.chunk]
            origin = rec.offset * size
            for src, off, n in read.runs:
                ranges.setdefault(rank, []).append((_storage_name(rec.storage), origin + src, n, dst + off))
    storages = {}  # the plain tensors' storages, read whole into buffers of this load
    for r, _ in plain:
        if r.storage not in storages:
            n = base.storages[r.storage].nbytes
            storages[r.storage] = torch.empty(n, dtype=torch.uint8)
            if n:
                ranges.setdefault(plain_rank, []).append(
                    (_storage_name(r.storage), 0, n, storages[r.storage].data_ptr()))
    # One read per saved rank, concurrently (each from its own holder; the copies run without the GIL).
    reads = []  # (saved rank, source, bytes, start, end) of each call, for stats

    def read(rank):
        start = time.perf_counter()
        source = session.read_ranges(step, rank, ranges[rank])
        reads.append((rank, source, sum(r[2] for r in ranges[rank]), start, time.perf_counter()))
        return source

    concurrently(read, sorted(ranges))
    with torch.no_grad():
        for local, buf in staged:
            local.copy_(buf.view(local.dtype).view(local.shape))
        values = {}
        for r, t in plain:
            v = state_tree.view_of(storages[r.storage], r)
            if t is not None:
                t.copy_(v)
                values[id(r)] = t
            else:
                if r.parameter:
                    v = torch.nn.Parameter(v, requires_grad=r.requires_grad)
                elif r.requires_grad:
                    v.requires_grad_(True)
                values[id(r)] = v
    tensors = []
    for r in base.records:
        tensors.append(targets[r.path][0] if r.shard is not None else values[id(r)])
    state = state_tree.rebuild(base.tree, base.records, tensors)
    if stats is not None:
        stats.clear()
        stats.update(read_stats(step, world, began, reads, time.perf_counter()))
    return step, state


# What one rank's attempt at a step came to; every rank takes the worst of all ranks' (allreduce max).
LOADED, CORRUPT, FAILED = 0, 1, 2


def _worst(comm, code: int) -> int:
    flag = array.array("i", [int(code)])
    comm.allreduce(memoryview(flag), "max")
    return flag[0]


def load_resharded_or_older(session, comm, point, into: Any, plain_rank: Optional[int] = None,
                            stats: Optional[Dict[str, Any]] = None) -> Tuple[int, Any]:
    """load_resharded, collectively safe when a step cannot be read: after its reads every rank learns (an
    allreduce of a flag) whether every rank loaded the step. Where some saved rank's chunk failed verification
    on every holder (shoal.VersionRefused, logged naming the saved rank, buffer and chunk), every rank goes on
    to the newest older step whose every chunk is held (Session.agree_restore with at_most_step) and loads
    that one, its reads overwriting every byte of into='s sharded tensors that the failed attempt wrote (its
    plain tensors are written only once a step's reads all succeeded), so no rank ends with half of one step
    and half of another. Any other error on any rank raises on every rank. FileNotFoundError when no older
    step is held: into='s sharded tensors are then undefined (partly written from the refused step)."""
    while True:
        code, problem, got = LOADED, None, None
        try:
            got = load_resharded(session, comm, point, into, plain_rank, stats)
        except shoal.VersionRefused as e:
            code, problem = CORRUPT, e
            log.warning("shoal: step %d cannot be loaded: %s", point.step, e)
        except Exception as e:  # noqa: BLE001 (re-raised below, after the other ranks learnt of it)
            code, problem = FAILED, e
        worst = _worst(comm, code)
        if worst == LOADED:
            return got
        if code == FAILED:
            raise problem
        if worst == FAILED:
            raise RuntimeError("the load of step %d failed on another rank" % point.step) from problem
        older = session.agree_restore(comm, at_most_step=point.step - 1) if point.step > 0 else None
        if older is None:
            raise FileNotFoundError("step %d cannot be loaded (a chunk failed verification on every host that "
                                    "holds it%s) and no older step is held: the sharded tensors of into= are "
                                    "undefined" % (point.step, ": %s" % problem if problem is not None else ""))
        log.warning("shoal: every rank goes on from step %d to step %d (saved by a world of %d)", point.step,
                    older.step, older.saved_world)
        # Resharded even where the older step's world is this one's: its plain values then come from
        # saved rank plain_rank's version as well, on every rank.
        point = older

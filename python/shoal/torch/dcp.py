"""torch.distributed.checkpoint (DCP) storage over shoal's memory: dcp.save and dcp.load keep their planner
(and its resharding) and gain shoal's flash versions, replicated by the agent to a peer host.

    from shoal.torch.dcp import ShoalStorageWriter, ShoalStorageReader
    dcp.save({"model": model.state_dict(), "optim": opt.state_dict()}, storage_writer=ShoalStorageWriter(ckpt, step=s))
    dcp.load(state, storage_reader=ShoalStorageReader(ckpt))            # the newest step, or step=s

Saving: each rank's write items become one shoal version of that rank at the DCP checkpoint's step (the
step= argument, or dcp.save's checkpoint_id): its first buffer is the save's whole table (dcp_table: every
item's name, chunk and properties, and which saved rank's buffer holds it), then one buffer per item, a
tensor's bytes copied straight from its memory (row-major), a non-tensor item's serialized bytes. Every
version holding the whole table, DCP's Metadata survives the loss of any host.

Loading on the world that saved (same size): each rank reads the version of its own saved rank, from its
host's memory (a peer's replica when its host was replaced or the ranks were renumbered), straight into the caller's tensors where a read item is a whole
chunk; items DCP placed on another rank's version (replicated tensors and values, which DCP's planner saves
once) are broadcast by that rank, which holds them, over the DCP process group. On another world, each rank
reads exactly the byte ranges its read items need from the saved ranks' versions (dcp_cross_world). A
non-tensor item is handed to DCP's planner only after it loaded with torch.load(weights_only=True).
"""
import dataclasses
import io
import logging
import threading
from typing import Any, Dict, List, Optional, Tuple

import torch
import torch.distributed as dist

try:
    from torch.distributed.checkpoint.metadata import Metadata, StorageMeta
    from torch.distributed.checkpoint.planner import LoadItemType, LoadPlan, LoadPlanner, SavePlan, SavePlanner
    from torch.distributed.checkpoint.storage import StorageReader, StorageWriter, WriteResult
except ImportError as e:  # torch 1.x: DCP's storage interface of 2.x is missing
    raise ImportError("shoal.torch.dcp needs the torch.distributed.checkpoint of torch 2.x; this is torch %s (%s)"
                      % (torch.__version__, e)) from e
from torch.futures import Future

import shoal
from . import dcp_table
from .checkpointer import Checkpointer
from .dcp_cross_world import (CrossWorldReads, agree_restore, all_ranks_agree, load_bytes_safely, read_region,
                              read_table)

_PLAN_TAG = "shoal.dcp"
# What each rank found reading the table (all_ranks_agree takes the worst).
_TABLE_OK, _TABLE_REFUSED, _TABLE_FAILED = 0, 1, 2
log = logging.getLogger("shoal.torch.dcp")


class _Source:
    """The session and communicator a writer or reader works through: a Checkpointer's, a Session's, or this
    worker's agent's (Session.connect())."""

    def __init__(self, checkpointer_or_session):
        self.checkpointer = checkpointer_or_session if isinstance(checkpointer_or_session, Checkpointer) else None
        if self.checkpointer is not None:
            self.session = self.checkpointer.session
        elif checkpointer_or_session is None:
            self.session = shoal.Session.connect()
        elif isinstance(checkpointer_or_session, shoal.Session):
            self.session = checkpointer_or_session
        else:
            raise TypeError("ShoalStorageWriter/Reader take a shoal.torch.Checkpointer, a shoal.Session or None, "
                            "not %s" % type(checkpointer_or_session).__name__)
        self._comm = None

    def communicator(self) -> "shoal.Communicator":
        if self.checkpointer is not None:
            return self.checkpointer.communicator()
        if self._comm is None or self._comm.aborted:
            self._comm = self.session.communicator()
        return self._comm

    def lock(self):
        """The Checkpointer's lock (its own saves and loads wait for ours), after its copy in flight."""
        if self.checkpointer is None:
            return threading.Lock()
        self.checkpointer._finish_pending()  # noqa: SLF001 (one package)
        return self.checkpointer._lock  # noqa: SLF001


def _step_of(checkpoint_id) -> int:
    """A DCP checkpoint_id as a shoal step: an int, or the text of one (e.g. "1200", "step-1200")."""
    if isinstance(checkpoint_id, int) and not isinstance(checkpoint_id, bool):
        step = checkpoint_id
    else:
        text = str(checkpoint_id).rsplit("/", 1)[-1].rsplit("-", 1)[-1].rsplit("_", 1)[-1]
        if not text.isdigit():
            raise ValueError("a shoal DCP checkpoint_id is a step (an int, or text ending in one, like 'step-1200'), "
                             "not %r" % (checkpoint_id,))
        step = int(text)
    if not 0 <= step < 1 << 63:
        raise ValueError("step %d is out of range" % step)
    return step


def _check_rank(comm, dcp_rank: Optional[int]) -> None:
    if dcp_rank is not None and dcp_rank != comm.rank:
        raise ValueError("DCP's rank %d is shoal's rank %d: the process group dcp.save/load run on must rank the "
                         "processes as shoal's view does (shoal.torch.init_process_group's group does)"
                         % (dcp_rank, comm.rank))


def _done(value) -> Future:
    fut: Future = Future()
    fut.set_result(value)
    return fut


class ShoalStorageWriter(StorageWriter):
    """dcp.save(state, storage_writer=ShoalStorageWriter(checkpointer_or_session, step=s)): the checkpoint as
    shoal versions of step s, one per rank, in this host's shared memory (the agent replicates each to a
    peer). checkpointer_or_session: a shoal.torch.Checkpointer (its session, communicator and lock), a
    shoal.Session, or None for this worker's agent. step: or dcp.save's checkpoint_id (an int, or text
    ending in one)."""

    def __init__(self, checkpointer_or_session: Any = None, step: Optional[int] = None):
        super().__init__()
        self._source = _Source(checkpointer_or_session)
        self.step = None if step is None else _step_of(step)
        self._rank: Optional[int] = None
        self._table: Optional[dcp_table.Table] = None

    @property
    def session(self) -> "shoal.Session":
        return self._source.session

    def reset(self, checkpoint_id=None) -> None:
        if checkpoint_id is not None:
            self.step = _step_of(checkpoint_id)
        self._table = None

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id) -> bool:
        try:
            _step_of(checkpoint_id)
            return True
        except ValueError:
            return False

    def storage_meta(self) -> Optional[StorageMeta]:
        return None

    def set_up_storage_writer(self, is_coordinator: bool, *args, **kwargs) -> None:
        self._rank = kwargs.get("rank")

    def prepare_local_plan(self, plan: SavePlan) -> SavePlan:
        if self.step is None:
            raise ValueError("ShoalStorageWriter needs the checkpoint's step: ShoalStorageWriter(..., step=s) or "
                             "dcp.save(..., checkpoint_id=s)")
        return plan

    def prepare_global_plan(self, plans: List[SavePlan]) -> List[SavePlan]:
        table = dcp_table.build(plans).encode()
        return [dataclasses.replace(p, storage_data=(_PLAN_TAG, table)) for p in plans]

    def write_data(self, plan: SavePlan, planner: SavePlanner) -> Future:
        if not (isinstance(plan.storage_data, tuple) and len(plan.storage_data) == 2
                and plan.storage_data[0] == _PLAN_TAG):
            raise ValueError("the save plan lacks shoal's table: ShoalStorageWriter.prepare_global_plan did not run "
                             "on it (DCP's plan caching is not supported)")
        encoded = plan.storage_data[1]
        comm = self._source.communicator()
        _check_rank(comm, self._rank)
        table = dcp_table.parse(encoded)
        mine = table.of_rank(comm.rank)
        if table.saved_world != comm.world_size or len(mine) != len(plan.items):
            raise ValueError("the save plan of rank %d has %d items, shoal's table %d of a world of %d (this world "
                             "has %d)" % (comm.rank, len(plan.items), len(mine), table.saved_world, comm.world_size))
        buffers: List[Tuple[str, int]] = [(dcp_table.TABLE_BUFFER, len(encoded))]
        parts, keep, device_parts, results = [], [], [], []
        for item, record in zip(plan.items, mine):
            if item.index.fqn != record.fqn:
                raise ValueError("rank %d's plan names %s where shoal's table has %s" % (comm.rank, item.index.fqn,
                                                                                          record.fqn))
            data = planner.resolve_data(item)
            if record.is_tensor:
                t = data.detach()
                if t.dtype != record.dtype or t.numel() * t.element_size() != record.nbytes:
                    raise ValueError("%s: the data DCP resolved (%s, %d elements) is not the chunk it planned (%s, "
                                     "sizes %s)" % (record.fqn, t.dtype, t.numel(), record.dtype,
                                                    list(record.chunk_sizes)))
                if not t.is_contiguous():
                    t = t.contiguous()
                keep.append(t)
                nbytes = record.nbytes
                if t.device.type == "cuda":
                    device_parts.append((record.buffer, t))
                elif t.device.type != "cpu":
                    raise ValueError("%s: tensors on %s are not supported" % (record.fqn, t.device))
                else:
                    parts.append((record.buffer, t.data_ptr(), nbytes))
            else:
                raw = data.getvalue() if isinstance(data, io.BytesIO) else bytes(data)
                keep.append(raw)
                nbytes = len(raw)
                parts.append((record.buffer, raw))
            buffers.append((record.buffer, nbytes))
            results.append(WriteResult(index=item.index, size_in_bytes=nbytes,
                                       storage_data=(comm.rank, record.buffer)))
        with self._source.lock():
            save = self.session.begin_save(comm, self.step, buffers)
            try:
                save.write(dcp_table.TABLE_BUFFER, encoded)
                for name, t in device_parts:
                    save.write_from_device(name, t.data_ptr(), torch.cuda.current_stream(t.device).cuda_stream)
                save.write_many([p for p in parts if len(p) == 3])
                for p in parts:
                    if len(p) == 2:
                        save.write(p[0], p[1])
                save.commit()
            except BaseException:
                save.abandon()
                raise
        if self._source.checkpointer is not None:
            self._source.checkpointer.last_saved = self.step
        self._table = table
        return _done(results)

    def finish(self, metadata: Metadata, results) -> None:
        """The coordinator: checks that the table every version holds rebuilds the Metadata DCP recorded."""
        if self._table is None:
            return
        rebuilt = self._table.metadata().state_dict_metadata
        if set(rebuilt) != set(metadata.state_dict_metadata):
            missing = sorted(set(metadata.state_dict_metadata) - set(rebuilt))[:4]
            raise ValueError("shoal's DCP table does not rebuild the checkpoint's metadata (e.g. %s): was a custom "
                             "planner used?" % missing)
        for fqn, md in metadata.state_dict_metadata.items():
            chunks = getattr(md, "chunks", None)
            if chunks is not None and len(chunks) != len(rebuilt[fqn].chunks):
                raise ValueError("%s: DCP recorded %d chunks, shoal's table %d" % (fqn, len(chunks),
                                                                                   len(rebuilt[fqn].chunks)))


class ShoalStorageReader(StorageReader):
    """dcp.load(state, storage_reader=ShoalStorageReader(checkpointer_or_session, step=None)): the newest step
    every rank can load (or `step`: an error unless it is that one), from shoal's memory. process_group: the
    group dcp.load runs on (default: the default group), over which a rank hands the items DCP saved once to
    the ranks that read them."""

    def __init__(self, checkpointer_or_session: Any = None, step: Optional[int] = None, *,
                 process_group: Optional[dist.ProcessGroup] = None):
        super().__init__()
        self._source = _Source(checkpointer_or_session)
        self.step = None if step is None else _step_of(step)
        self.process_group = process_group
        self.loaded_step: Optional[int] = None
        self.source: Optional[str] = None  # "local" or the peer this rank's version came from
        self._table: Optional[dcp_table.Table] = None
        self._metadata: Optional[Metadata] = None
        self._cross: Optional[CrossWorldReads] = None
        self._rank: Optional[int] = None

    @property
    def session(self) -> "shoal.Session":
        return self._source.session

    def reset(self, checkpoint_id=None) -> None:
        if checkpoint_id is not None:
            self.step = _step_of(checkpoint_id)
        self._table = self._metadata = self._cross = None

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id) -> bool:
        return ShoalStorageWriter.validate_checkpoint_id(checkpoint_id)

    def read_metadata(self) -> Metadata:
        """Collective (DCP calls it on every rank): agrees on the step (Session.agree_restore: the newest step
        every saved rank completed and some host holds, at most `step` when one is asked for) and reads its
        table, a few kilobytes, as a byte range of one saved rank's version (this rank's own on the same world,
        so that a host's memory is read first), never a whole version."""
        comm = self._source.communicator()
        want = self.step
        at_most = want
        while True:
            with self._source.lock():
                point = agree_restore(self.session, comm, at_most)
            if point is None:
                raise FileNotFoundError("no step%s is complete in shoal's memory for every rank of this world" % (
                    "" if want is None else " at or below step %d (the one asked for)" % want))
            if want is not None and point.step != want:
                raise ValueError("step %d is not held in shoal's memory (the newest older step is %d)"
                                 % (want, point.step))
            # Every rank learns whether every rank's table parsed: a refused table (a forged or corrupt version)
            # sends all of them on to the next older step, an error stops all of them.
            code, problem = _TABLE_OK, None
            try:
                table, source = read_table(self.session, point, comm.rank % point.saved_world)
            except (dcp_table.TableRefused, shoal.VersionRefused) as e:
                code, problem = _TABLE_REFUSED, e
            except Exception as e:  # noqa: BLE001 (raised on every rank below, this one's own error here)
                code, problem = _TABLE_FAILED, e
            worst = all_ranks_agree(comm, code)
            if worst == _TABLE_OK:
                break
            if code == _TABLE_FAILED:
                raise problem
            if worst == _TABLE_FAILED:
                raise ValueError("step %d: another rank could not read the checkpoint's table" % point.step)
            log.warning("shoal: the DCP table of step %d was refused (%s); trying an older step", point.step,
                        problem if problem is not None else "on another rank")
            if want is not None:
                raise shoal.VersionRefused("step %d: its table was refused (%s)" % (
                    want, problem if problem is not None else "on another rank"))
            at_most = point.step - 1
            if at_most < 0:
                raise FileNotFoundError("no step is complete in shoal's memory for every rank of this world")
        self._table, self.loaded_step, self.source = table, point.step, source
        self._cross = None
        if table.saved_world != comm.world_size:
            self._cross = CrossWorldReads(self.session, comm, point)
        self._metadata = table.metadata()
        return self._metadata

    def set_up_storage_reader(self, metadata: Metadata, is_coordinator: bool, *args, **kwargs) -> None:
        self._metadata = metadata
        self._rank = kwargs.get("rank")

    def prepare_local_plan(self, plan: LoadPlan) -> LoadPlan:
        return plan

    def prepare_global_plan(self, plans: List[LoadPlan]) -> List[LoadPlan]:
        """The coordinator, on the same world: which buffers each saved rank hands to the others (the items
        DCP saved once that other ranks read), the same table on every rank."""
        if self._cross is not None:
            return plans
        sends: Dict[int, set] = {}
        for rank, plan in enumerate(plans):
            for ri in plan.items:
                rec = self._record(ri)
                if rec.rank != rank:
                    sends.setdefault(rec.rank, set()).add(rec.buffer)
        table = tuple((s, tuple(sorted(b, key=lambda n: int(n[1:])))) for s, b in sorted(sends.items()))
        return [dataclasses.replace(p, storage_data=(_PLAN_TAG, table)) for p in plans]

    def _record(self, ri) -> dcp_table.Record:
        rec = self._metadata.storage_data.get(ri.storage_index) if self._metadata is not None else None
        if rec is None:
            raise ValueError("%s: the checkpoint of step %s holds no chunk at %s" % (
                ri.storage_index.fqn, self.loaded_step, list(ri.storage_index.offset or ())))
        return rec

    def read_data(self, plan: LoadPlan, planner: LoadPlanner) -> Future:
        comm = self._source.communicator()
        _check_rank(comm, self._rank)
        items = [(ri, self._record(ri)) for ri in plan.items]
        for ri, rec in items:
            if (ri.type == LoadItemType.BYTE_IO) == rec.is_tensor:
                raise ValueError("%s: the checkpoint holds %s where this state has %s" % (
                    ri.storage_index.fqn, "a tensor" if rec.is_tensor else "a value",
                    "a value" if rec.is_tensor else "a tensor"))
        if self._cross is not None:
            self._cross.read(items, planner)
            return _done(None)
        tag = plan.storage_data
        if not (isinstance(tag, tuple) and len(tag) == 2 and tag[0] == _PLAN_TAG):
            raise ValueError("the load plan lacks shoal's hand-over table (ShoalStorageReader.prepare_global_plan)")
        sends = {s: list(names) for s, names in tag[1]}
        self._read_own(comm, items, planner, sends.get(comm.rank, []), sends)
        return _done(None)

    def _read_own(self, comm, items, planner, my_sends: List[str], sends: Dict[int, List[str]]) -> None:
        """Reads this rank's own version (its host's memory first), then hands over and receives the items
        saved once that another rank reads."""
        rank, step = comm.rank, self.loaded_step
        mine = [(ri, rec) for ri, rec in items if rec.rank == rank]
        readers: Dict[str, List] = {}
        for ri, rec in mine:
            readers.setdefault(rec.buffer, []).append(ri)
        direct: Dict[str, torch.Tensor] = {}
        for name, ris in readers.items():
            rec = self._record(ris[0])
            if len(ris) == 1 and name not in my_sends and rec.is_tensor and \
                    list(ris[0].storage_offsets) == [0] * len(rec.chunk_sizes) and \
                    tuple(ris[0].lengths) == rec.chunk_sizes:
                target = planner.resolve_tensor(ris[0])
                if target.device.type == "cpu" and target.is_contiguous() and target.dtype == rec.dtype and \
                        target.numel() * target.element_size() == rec.nbytes:
                    direct[name] = target
        wanted = set(readers) | set(my_sends)
        temp: Dict[str, torch.Tensor] = {}

        def place(layout):
            if layout.step > step:  # newer than the metadata's: this load goes on to older ones
                raise shoal.VersionRefused("step %d is not step %s, whose metadata this load planned with"
                                           % (layout.step, step))
            if layout.step < step:
                raise ValueError("step %d is not complete for every saved rank (the newest that is: step %d)"
                                 % (step, layout.step))
            if layout.saved_rank != rank:
                raise ValueError("step %d: this rank %d was given the version of saved rank %d"
                                 % (step, rank, layout.saved_rank))
            out = []
            for name, _, size in layout.entries:
                if name in direct:
                    t = direct[name]
                    if t.numel() * t.element_size() != size:
                        raise shoal.VersionRefused("buffer %s holds %d bytes, its table says %d" % (
                            name, size, t.numel() * t.element_size()))
                    out.append((t.data_ptr(), size))
                elif name in wanted:
                    temp[name] = torch.empty(size, dtype=torch.uint8)
                    out.append((temp[name].data_ptr(), size))
                else:
                    out.append(None)
            return out

        # saved_rank: this rank's own saved rank on every rank, at the newest step every saved rank completed --
        # from this host's memory when it saved (or holds a replica of) that rank, else from a peer that holds it.
        with self._source.lock():
            restored = self.session.restore_into(comm, place, rank)
        if restored is None:
            raise FileNotFoundError("step %s is no longer complete in shoal's memory for every saved rank" % step)
        missing = sorted(wanted - set(direct) - set(temp))
        if missing:
            raise ValueError("step %d of rank %d lacks buffers %s its table names" % (step, rank, missing[:4]))
        for name, ris in readers.items():
            for ri in ris:
                rec = self._record(ri)
                if name in direct:
                    planner.commit_tensor(ri, direct[name])
                else:
                    _apply(planner, ri, rec, temp[name])
        self._exchange(rank, items, planner, sends, temp)

    def _exchange(self, rank, items, planner, sends: Dict[int, List[str]], temp: Dict[str, torch.Tensor]) -> None:
        """Each saved rank with items others read broadcasts those buffers (sizes first, then the bytes)."""
        wants: Dict[Tuple[int, str], List] = {}
        for ri, rec in items:
            if rec.rank != rank:
                wants.setdefault((rec.rank, rec.buffer), []).append((ri, rec))
        for s in sorted(sends):
            names = sends[s]
            sizes = torch.zeros(len(names), dtype=torch.int64)
            if s == rank:
                sizes = torch.tensor([temp[n].numel() for n in names], dtype=torch.int64)
            dist.broadcast(sizes, src=s, group=self.process_group)
            total = int(sizes.sum())
            if total < 0 or any(int(x) < 0 for x in sizes):
                raise ValueError("rank %d announced negative buffer sizes" % s)
            if total == 0:
                continue
            payload = torch.cat([temp[n] for n in names]) if s == rank else torch.empty(total, dtype=torch.uint8)
            dist.broadcast(payload, src=s, group=self.process_group)
            at = 0
            for name, size in zip(names, (int(x) for x in sizes)):
                for ri, rec in wants.get((s, name), []):
                    _apply(planner, ri, rec, payload[at:at + size])
                at += size
        for (s, name), pairs in wants.items():
            if name not in sends.get(s, []):
                raise ValueError("%s: no rank handed over buffer %s of rank %d" % (pairs[0][1].fqn, name, s))


def _apply(planner: LoadPlanner, ri, rec: dcp_table.Record, raw: torch.Tensor) -> None:
    """Copies read item `ri`'s region of a whole saved buffer (uint8) into the planner's tensor, or hands a
    value to the planner."""
    if not rec.is_tensor:
        load_bytes_safely(planner, ri, raw.numpy().tobytes())
        return
    if raw.numel() != rec.nbytes:
        raise ValueError("%s: buffer %s of rank %d holds %d bytes, its chunk %d" % (rec.fqn, rec.buffer, rec.rank,
                                                                                   raw.numel(), rec.nbytes))
    target = planner.resolve_tensor(ri)
    target.copy_(read_region(raw, rec, ri.storage_offsets, ri.lengths))
    planner.commit_tensor(ri, target)

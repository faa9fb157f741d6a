"""dcp.load onto a world of another size than the one that saved (N -> M): each rank reads exactly the byte
ranges its read items need from the saved ranks' versions, local memory first, each range verified by the
session, through Session.agree_restore / version_buffers / read_ranges.

Those three calls are being added to shoal.Session (issue 38's ranged reads). Until a build has them,
CrossWorldReads refuses at once, on every rank, before DCP plans a read: a checkpoint is never loaded from
the wrong saved rank's bytes. Also here: the two pieces both read paths share, read_region (a read item's
box of a saved chunk's bytes) and load_bytes_safely (a non-tensor item handed to DCP's planner only once it
loads as plain values).
"""
import array
import io
from typing import Dict, List, Optional, Sequence, Tuple

import torch
from torch.distributed.checkpoint.planner import LoadPlanner

from . import dcp_table, reshard
from .reshard_load import concurrently

_NEEDED = ("agree_restore", "version_buffers", "read_ranges")
MAX_VALUE_BYTES = 1 << 30
# A table larger than this is refused before memory is allocated for it (a million items is ~100 MB).
MAX_TABLE_BYTES = 1 << 30


class CrossWorldUnavailable(RuntimeError):
    """This build of shoal cannot read ranges of other ranks' versions."""


def has_ranged_reads(session) -> bool:
    return all(hasattr(session, name) for name in _NEEDED)


def read_region(raw: torch.Tensor, rec: dcp_table.Record, storage_offsets: Sequence[int],
                lengths: Sequence[int]) -> torch.Tensor:
    """The box (storage_offsets, lengths) of saved chunk `rec` whose whole row-major bytes are `raw` (uint8)."""
    chunk = raw.view(rec.dtype).view(rec.chunk_sizes) if rec.chunk_sizes else raw.view(rec.dtype).view(())
    for d, (o, n) in enumerate(zip(storage_offsets, lengths)):
        if o < 0 or n < 0 or o + n > rec.chunk_sizes[d]:
            raise ValueError("%s: a read of [%d:%d] in dimension %d lies outside the saved chunk of sizes %s" % (
                rec.fqn, o, o + n, d, list(rec.chunk_sizes)))
        chunk = chunk.narrow(d, o, n)
    return chunk


def runs_for(rec: dcp_table.Record, storage_offsets: Sequence[int], lengths: Sequence[int]) -> List[reshard.Run]:
    """(offset in the saved chunk's bytes, offset in the read box's bytes, nbytes) that fill the box
    (storage_offsets, lengths) of chunk `rec`, merged where both sides continue."""
    ndim = len(rec.chunk_sizes)
    if len(storage_offsets) != ndim or len(lengths) != ndim:
        raise ValueError("%s: a read of %d dimensions from a chunk of %d" % (rec.fqn, len(lengths), ndim))
    for d in range(ndim):
        if storage_offsets[d] < 0 or lengths[d] < 0 or storage_offsets[d] + lengths[d] > rec.chunk_sizes[d]:
            raise ValueError("%s: a read of [%d:%d] in dimension %d lies outside the saved chunk of sizes %s" % (
                rec.fqn, storage_offsets[d], storage_offsets[d] + lengths[d], d, list(rec.chunk_sizes)))
    if any(n == 0 for n in lengths):
        return []
    src = reshard.Chunk(tuple(0 for _ in range(ndim)), tuple(rec.chunk_sizes))
    box = reshard.Chunk(tuple(int(o) for o in storage_offsets), tuple(int(n) for n in lengths))
    return reshard.copy_runs(src, box, torch.empty((), dtype=rec.dtype).element_size())


def load_bytes_safely(planner: LoadPlanner, ri, data: bytes) -> None:
    """Hands a saved value to DCP's planner (whose default load_bytes unpickles it with weights_only=False)
    only after it loaded with torch.load(weights_only=True): a value that names any other class is refused."""
    try:
        torch.load(io.BytesIO(data), weights_only=True)
    except Exception as e:  # noqa: BLE001 (whatever the restricted loader refuses)
        raise ValueError("%s: the saved value does not load as plain values (torch.load(weights_only=True) "
                         "refused it: %s); shoal does not hand it to DCP's planner" % (ri.storage_index.fqn, e)) from e
    planner.load_bytes(ri, io.BytesIO(data))


def agree_restore(session, comm, at_most_step: Optional[int] = None):
    """Session.agree_restore (collective): the newest step every saved rank completed and some host holds, at
    most at_most_step when given."""
    if at_most_step is None:
        return session.agree_restore(comm)
    return session.agree_restore(comm, at_most_step=int(at_most_step))


def read_table(session, point, first_rank: int) -> Tuple[dcp_table.Table, str]:
    """(table, source) of step point.step: the first buffer of saved rank first_rank's version (this rank's own
    on the same world, its host's memory first), read as one byte range and parsed through dcp_table's
    restricted path. ValueError for a version shoal's DCP writer did not save; dcp_table.TableRefused for a
    table that does not parse or names another world."""
    step = point.step
    entries = session.version_buffers(step, first_rank)
    if not entries or entries[0][0] != dcp_table.TABLE_BUFFER:
        raise ValueError("step %d was not saved by shoal.torch.dcp.ShoalStorageWriter (its first buffer is %r)"
                         % (step, entries[0][0] if entries else None))
    size = entries[0][1]
    if not 0 < size <= MAX_TABLE_BYTES:
        raise dcp_table.TableRefused("step %d: a table of %d bytes (at most %d)" % (step, size, MAX_TABLE_BYTES))
    raw = torch.empty(size, dtype=torch.uint8)
    source = session.read_ranges(step, first_rank, [(dcp_table.TABLE_BUFFER, 0, size, raw.data_ptr())])
    table = dcp_table.parse(raw.numpy().tobytes())
    if table.saved_world != point.saved_world:
        raise dcp_table.TableRefused("step %d: its table says a world of %d, the versions %d" % (
            step, table.saved_world, point.saved_world))
    return table, source


def all_ranks_agree(comm, code: int) -> int:
    """The largest of every rank's code (collective): 0 where every rank succeeded."""
    flag = array.array("i", [int(code)])
    comm.allreduce(memoryview(flag), "max")
    return flag[0]


class CrossWorldReads:
    """The reads of one dcp.load on a world of another size than the one that saved step point.step: each rank
    reads from every saved rank's version exactly the byte ranges its read items need, one read_ranges call
    per saved rank, all saved ranks at once (each from its own holder; the copies run without the GIL)."""

    def __init__(self, session, comm, point):
        if not has_ranged_reads(session):
            raise CrossWorldUnavailable(
                "step %d was saved by a world of %d ranks and this world has %d: loading it onto another world reads "
                "byte ranges of the saved ranks' versions (shoal.Session.read_ranges), which this build of shoal "
                "lacks; load it on a world of %d ranks" % (point.step, point.saved_world, comm.world_size,
                                                            point.saved_world))
        self.session, self.step, self.saved_world = session, point.step, point.saved_world
        self.sources: Dict[int, str] = {}  # saved rank -> "local" or the holder read from
        self.bytes_read = 0

    def _sizes(self, saved_ranks: List[int]) -> Dict[int, Dict[str, int]]:
        """{saved rank: {buffer: nbytes}} of the versions read, all asked at once."""
        tables = concurrently(lambda r: dict(self.session.version_buffers(self.step, r)), saved_ranks)
        return dict(zip(saved_ranks, tables))

    def read(self, items: List[Tuple], planner: LoadPlanner) -> None:
        """items: [(ReadItem, Record)] of this rank's plan. Every buffer's size is checked against the table for
        every saved rank before any range is read; then one read_ranges call per saved rank, concurrently."""
        by_rank: Dict[int, List[Tuple]] = {}
        for ri, rec in items:
            by_rank.setdefault(rec.rank, []).append((ri, rec))
        saved_ranks = sorted(by_rank)
        sizes = self._sizes(saved_ranks)
        ranges: Dict[int, List[Tuple[str, int, int, int]]] = {r: [] for r in saved_ranks}
        after = []
        for saved_rank in saved_ranks:
            for ri, rec in by_rank[saved_rank]:
                size = sizes[saved_rank].get(rec.buffer)
                if size is None:
                    raise ValueError("%s: step %d of saved rank %d has no buffer %s" % (rec.fqn, self.step, saved_rank,
                                                                                       rec.buffer))
                if not rec.is_tensor:
                    if not 0 <= size <= MAX_VALUE_BYTES:
                        raise ValueError("%s: a saved value of %d bytes" % (rec.fqn, size))
                    raw = torch.empty(size, dtype=torch.uint8)
                    ranges[saved_rank].append((rec.buffer, 0, size, raw.data_ptr()))
                    after.append((ri, rec, raw, None))
                    continue
                if size != rec.nbytes:
                    raise ValueError("%s: buffer %s of saved rank %d holds %d bytes, its chunk %d" % (
                        rec.fqn, rec.buffer, saved_rank, size, rec.nbytes))
                target = planner.resolve_tensor(ri)
                shape = tuple(int(n) for n in ri.lengths)
                direct = target.device.type == "cpu" and target.is_contiguous() and target.dtype == rec.dtype \
                    and tuple(target.shape) == shape
                box = target if direct else torch.empty(shape, dtype=rec.dtype)
                for src, dst, n in runs_for(rec, ri.storage_offsets, ri.lengths):
                    ranges[saved_rank].append((rec.buffer, src, n, box.data_ptr() + dst))
                after.append((ri, rec, box, target))
        got = concurrently(lambda r: self.session.read_ranges(self.step, r, ranges[r]), saved_ranks)
        self.sources.update(zip(saved_ranks, got))
        self.bytes_read += sum(n for r in saved_ranks for _, _, n, _ in ranges[r])
        for ri, rec, got, target in after:
            if target is None:
                load_bytes_safely(planner, ri, got.numpy().tobytes())
                continue
            if got is not target:
                target.copy_(got)
            planner.commit_tensor(ri, target)


"""dcp.load onto a world of another size than the one that saved (N -> M): each rank reads exactly the byte
ranges its read items need from the saved ranks' versions, local memory first, each range verified by the
session, through Session.agree_restore / version_buffers / read_ranges.

Those three calls are being added to shoal.Session (issue 38's ranged reads). Until a build has them,
CrossWorldReads refuses at once, on every rank, before DCP plans a read: a checkpoint is never loaded from
the wrong saved rank's bytes. Also here: the two pieces both read paths share, read_region (a read item's
box of a saved chunk's bytes) and load_bytes_safely (a non-tensor item handed to DCP's planner only once it
loads as plain values).
"""
import io
from typing import Dict, List, Sequence, Tuple

import torch
from torch.distributed.checkpoint.planner import LoadPlanner

from . import dcp_table, reshard

_NEEDED = ("agree_restore", "version_buffers", "read_ranges")
MAX_VALUE_BYTES = 1 << 30


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


class CrossWorldReads:
    """The reads of one dcp.load on a world of `world` ranks from a checkpoint `saved_world` ranks saved."""

    def __init__(self, session, comm, step: int, saved_world: int):
        if not has_ranged_reads(session):
            raise CrossWorldUnavailable(
                "step %d was saved by a world of %d ranks and this world has %d: loading it onto another world reads "
                "byte ranges of the saved ranks' versions (shoal.Session.read_ranges), which this build of shoal "
                "lacks; load it on a world of %d ranks" % (step, saved_world, comm.world_size, saved_world))
        point = session.agree_restore(comm)
        if point is None or point.step != step or point.saved_world != saved_world:
            raise ValueError("the step every saved rank completed and some host holds is %s, not step %d of a world "
                             "of %d" % ("none" if point is None else "step %d of a world of %d" % (
                                 point.step, point.saved_world), step, saved_world))
        self.session, self.step, self.saved_world = session, step, saved_world
        self.sources: Dict[int, str] = {}  # saved rank -> "local" or the holder read from
        self.bytes_read = 0

    def read(self, items: List[Tuple], planner: LoadPlanner) -> None:
        """items: [(ReadItem, Record)] of this rank's plan. One read_ranges call per saved rank."""
        by_rank: Dict[int, List[Tuple]] = {}
        for ri, rec in items:
            by_rank.setdefault(rec.rank, []).append((ri, rec))
        for saved_rank in sorted(by_rank):
            sizes = dict(self.session.version_buffers(self.step, saved_rank))
            ranges, after = [], []
            for ri, rec in by_rank[saved_rank]:
                size = sizes.get(rec.buffer)
                if size is None:
                    raise ValueError("%s: step %d of saved rank %d has no buffer %s" % (rec.fqn, self.step, saved_rank,
                                                                                       rec.buffer))
                if not rec.is_tensor:
                    if not 0 <= size <= MAX_VALUE_BYTES:
                        raise ValueError("%s: a saved value of %d bytes" % (rec.fqn, size))
                    raw = torch.empty(size, dtype=torch.uint8)
                    ranges.append((rec.buffer, 0, size, raw.data_ptr()))
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
                    ranges.append((rec.buffer, src, n, box.data_ptr() + dst))
                after.append((ri, rec, box, target))
            self.sources[saved_rank] = self.session.read_ranges(self.step, saved_rank, ranges)
            self.bytes_read += sum(r[2] for r in ranges)
            for ri, rec, got, target in after:
                if target is None:
                    load_bytes_safely(planner, ri, got.numpy().tobytes())
                    continue
                if got is not target:
                    target.copy_(got)
                planner.commit_tensor(ri, target)

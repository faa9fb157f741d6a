"""Which bytes of which saved shard each rank of a new world reads: pure functions, no torch, no IO.

A sharded state (FSDP2, ZeRO, DCP) saves each tensor as chunks: boxes of its global shape, each a
row-major (C-order) block of its own, saved by one rank, as DCP's metadata records them (the tensor's
fully-qualified name, global shape, dtype, each chunk's offsets and lengths). A world of another size
shards the tensor into other boxes. For each box a new rank wants, plan_reads() names the saved chunks that
overlap it and, for each, the byte runs to copy: contiguous in the saved chunk and in the new box both,
merged as far as the two layouts allow, so that a row-sharded tensor (FSDP2's Shard(0)) costs one run per
overlapping chunk. check_cover() says what a saved table lacks (a range no chunk covers, chunks that
overlap) before anything is read.

Names: a box is a Chunk(offsets, lengths) in elements of the global shape; a run is
(src_byte_offset, dst_byte_offset, nbytes) inside the saved chunk's bytes and the new box's bytes.
"""
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

Run = Tuple[int, int, int]


@dataclass(frozen=True)
class Chunk:
    offsets: Tuple[int, ...]
    lengths: Tuple[int, ...]

    @property
    def numel(self) -> int:
        n = 1
        for length in self.lengths:
            n *= length
        return n

    def __str__(self) -> str:
        return "[" + ", ".join("%d:%d" % (o, o + n) for o, n in zip(self.offsets, self.lengths)) + "]"


def even_shard(global_shape: Sequence[int], world: int, rank: int, dim: int = 0) -> Chunk:
    """The box rank `rank` of `world` holds when `dim` is split as torch.chunk splits it (FSDP2's Shard(dim)):
    ceil(size / world) rows per rank, the last ranks' shorter or empty."""
    if not 0 <= rank < world:
        raise ValueError("rank %d is outside a world of %d" % (rank, world))
    size = global_shape[dim]
    per = -(-size // world) if size else 0
    start = min(rank * per, size)
    stop = min(start + per, size)
    offsets = [0] * len(global_shape)
    lengths = list(global_shape)
    offsets[dim], lengths[dim] = start, stop - start
    return Chunk(tuple(offsets), tuple(lengths))


def intersect(a: Chunk, b: Chunk) -> Optional[Chunk]:
    """The box both cover, or None when they share no element."""
    if len(a.offsets) != len(b.offsets):
        raise ValueError("boxes of %d and %d dimensions" % (len(a.offsets), len(b.offsets)))
    offsets, lengths = [], []
    for ao, an, bo, bn in zip(a.offsets, a.lengths, b.offsets, b.lengths):
        lo, hi = max(ao, bo), min(ao + an, bo + bn)
        if hi <= lo:
            return None
        offsets.append(lo)
        lengths.append(hi - lo)
    return Chunk(tuple(offsets), tuple(lengths))


def _strides(lengths: Sequence[int]) -> List[int]:
    strides, acc = [], 1
    for n in reversed(lengths):
        strides.append(acc)
        acc *= n
    return list(reversed(strides))


def copy_runs(src: Chunk, dst: Chunk, itemsize: int) -> List[Run]:
    """The byte runs that copy the overlap of `src` (a saved chunk's bytes, row-major) into `dst` (a new box's
    bytes, row-major); [] when they do not overlap. Runs are in order and merged where both sides continue."""
    both = intersect(src, dst)
    if both is None:
        return []
    ndim = len(both.lengths)
    if ndim == 0:
        return [(0, 0, itemsize)]
    s_strides, d_strides = _strides(src.lengths), _strides(dst.lengths)
    # The innermost dimensions over which both sides are contiguous form one run each time round.
    inner = ndim - 1
    run = both.lengths[inner]
    while inner > 0 and both.lengths[inner] == src.lengths[inner] == dst.lengths[inner]:
        inner -= 1
        run *= both.lengths[inner]
    runs: List[Run] = []
    outer = both.lengths[:inner]
    index = [0] * len(outer)
    while True:
        coords = [both.offsets[d] + (index[d] if d < inner else 0) for d in range(ndim)]
        s = sum((c - o) * st for c, o, st in zip(coords, src.offsets, s_strides)) * itemsize
        d = sum((c - o) * st for c, o, st in zip(coords, dst.offsets, d_strides)) * itemsize
        n = run * itemsize
        if runs and runs[-1][0] + runs[-1][2] == s and runs[-1][1] + runs[-1][2] == d:
            runs[-1] = (runs[-1][0], runs[-1][1], runs[-1][2] + n)
        else:
            runs.append((s, d, n))
        k = len(outer) - 1
        while k >= 0:
            index[k] += 1
            if index[k] < outer[k]:
                break
            index[k] = 0
            k -= 1
        if k < 0:
            return runs


def check_cover(name: str, global_shape: Sequence[int], chunks: Sequence[Chunk]) -> List[str]:
    """What is wrong with the chunks saved for tensor `name`: each chunk inside the shape, no two overlapping,
    every element covered. [] when the table is whole. Each problem names the tensor and the range."""
    shape = tuple(global_shape)
    problems = []
    whole = Chunk(tuple(0 for _ in shape), shape)
    for c in chunks:
        if len(c.offsets) != len(shape) or len(c.lengths) != len(shape) or \
                any(o < 0 or n < 0 or o + n > s for o, n, s in zip(c.offsets, c.lengths, shape)):
            problems.append("%s: chunk %s lies outside the tensor's shape %s" % (name, c, list(shape)))
    if problems:
        return problems
    live = [c for c in chunks if c.numel > 0]
    for i in range(len(live)):
        for j in range(i + 1, len(live)):
            both = intersect(live[i], live[j])
            if both is not None:
                problems.append("%s: chunks %s and %s overlap in %s" % (name, live[i], live[j], both))
    covered = sum(c.numel for c in live)
    if not problems and covered != whole.numel:
        missing = _first_uncovered(shape, live)
        problems.append("%s: %d of %d elements are in no saved chunk%s" % (
            name, whole.numel - covered, whole.numel, ", e.g. %s" % missing if missing else ""))
    return problems


def _first_uncovered(shape: Tuple[int, ...], live: Sequence[Chunk]) -> Optional[Chunk]:
    """A box of elements no chunk covers: the grid cells between the chunks' edges, the first one found."""
    cuts = []
    for d, size in enumerate(shape):
        edges = {0, size}
        for c in live:
            edges.update((c.offsets[d], c.offsets[d] + c.lengths[d]))
        cuts.append(sorted(e for e in edges if 0 <= e <= size))

    def cells(d, offsets, lengths):
        if d == len(shape):
            yield Chunk(tuple(offsets), tuple(lengths))
            return
        for lo, hi in zip(cuts[d], cuts[d][1:]):
            if hi > lo:
                yield from cells(d + 1, offsets + [lo], lengths + [hi - lo])

    for cell in cells(0, [], []):
        if not any(intersect(cell, c) for c in live):
            return cell
    return None


@dataclass(frozen=True)
class Read:
    """One saved chunk a new box reads from: which chunk (its index in the saved table) and the byte runs."""
    chunk: int
    runs: Tuple[Run, ...]

    @property
    def nbytes(self) -> int:
        return sum(n for _, _, n in self.runs)


def plan_reads(name: str, saved: Sequence[Chunk], wanted: Chunk, itemsize: int) -> List[Read]:
    """The reads that fill box `wanted` of tensor `name` from the saved chunks, in the table's order.
    ValueError naming the tensor and the range when the saved chunks leave part of the box uncovered."""
    reads = []
    for i, c in enumerate(saved):
        runs = copy_runs(c, wanted, itemsize)
        if runs:
            reads.append(Read(i, tuple(runs)))
    got = sum(r.nbytes for r in reads)
    if got != wanted.numel * itemsize:
        live = [c for c in saved if c.numel > 0]
        inside = [b for b in (intersect(c, wanted) for c in live) if b is not None]
        missing = _first_uncovered_in(wanted, inside)
        raise ValueError("%s: the saved chunks cover %d of the %d bytes of box %s%s" % (
            name, got, wanted.numel * itemsize, wanted, "; %s is in none" % missing if missing else ""))
    return reads


def _first_uncovered_in(box: Chunk, inside: Sequence[Chunk]) -> Optional[Chunk]:
    shifted = [Chunk(tuple(o - b for o, b in zip(c.offsets, box.offsets)), c.lengths) for c in inside]
    gap = _first_uncovered(box.lengths, shifted)
    if gap is None:
        return None
    return Chunk(tuple(o + b for o, b in zip(gap.offsets, box.offsets)), gap.lengths)


def plan_world(tensors: Dict[str, Tuple[Tuple[int, ...], int, Sequence[Chunk]]],
               boxes: Dict[str, Chunk]) -> Dict[str, List[Read]]:
    """For one new rank: {name: reads} for each tensor it holds a box of. tensors: {name: (global_shape,
    itemsize, saved chunks)}. ValueError for a tensor the saved state lacks, a shape that differs, or a box
    the saved chunks do not cover."""
    out = {}
    for name, box in boxes.items():
        if name not in tensors:
            raise ValueError("%s: the checkpoint holds no such tensor (another model?)" % name)
        shape, itemsize, saved = tensors[name]
        if len(box.offsets) != len(shape) or any(o + n > s for o, n, s in zip(box.offsets, box.lengths, shape)):
            raise ValueError("%s: box %s does not fit the saved global shape %s (another model?)"
                             % (name, box, list(shape)))
        out[name] = plan_reads(name, saved, box, itemsize)
    return out

"""shoal.torch.reshard: which saved bytes each new rank reads, over a grid of worlds N -> M and shapes, checked
by copying real bytes with the planned runs and comparing with the slices the new world should hold; and what
a saved table that does not cover its tensor, or overlaps itself, is told."""
import itertools

import numpy
import pytest

from shoal.torch.reshard import Chunk, check_cover, copy_runs, even_shard, intersect, plan_reads, plan_world

SHAPES = [(0,), (1,), (7,), (10, 3), (5, 4, 3), (3, 0, 2), (13, 5)]


def box_of(array, box):
    return array[tuple(slice(o, o + n) for o, n in zip(box.offsets, box.lengths))]


def apply(reads, saved_bytes, wanted, itemsize):
    out = bytearray(wanted.numel * itemsize)
    for r in reads:
        src = saved_bytes[r.chunk]
        for s, d, n in r.runs:
            out[d:d + n] = src[s:s + n]
    return bytes(out)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("n,m", list(itertools.product(range(1, 7), range(1, 7))))
def test_every_new_rank_reads_exactly_its_rows_of_an_even_shard(shape, n, m):
    full = numpy.arange(int(numpy.prod(shape)), dtype=numpy.float32).reshape(shape)
    saved = [even_shard(shape, n, r) for r in range(n)]
    assert check_cover("w", shape, saved) == []
    saved_bytes = [numpy.ascontiguousarray(box_of(full, c)).tobytes() for c in saved]
    for rank in range(m):
        wanted = even_shard(shape, m, rank)
        reads = plan_reads("w", saved, wanted, 4)
        assert apply(reads, saved_bytes, wanted, 4) == numpy.ascontiguousarray(box_of(full, wanted)).tobytes()
        # Rows are contiguous on both sides: one run per overlapping chunk.
        assert all(len(r.runs) == 1 for r in reads)
        assert sum(r.nbytes for r in reads) == wanted.numel * 4


@pytest.mark.parametrize("n,m", [(4, 3), (3, 4), (2, 6), (6, 2), (4, 4)])
def test_a_two_dimensional_shard_reads_runs_row_by_row(n, m):
    shape = (9, 8)
    full = numpy.arange(72, dtype=numpy.int64).reshape(shape)
    saved = [even_shard(shape, n, r, dim=1) for r in range(n)]  # columns
    saved_bytes = [numpy.ascontiguousarray(box_of(full, c)).tobytes() for c in saved]
    for rank in range(m):
        wanted = even_shard(shape, m, rank, dim=0)  # rows: every saved chunk overlaps every new box
        reads = plan_reads("w", saved, wanted, 8)
        assert apply(reads, saved_bytes, wanted, 8) == numpy.ascontiguousarray(box_of(full, wanted)).tobytes()


def test_runs_merge_where_both_sides_continue_and_split_where_they_do_not():
    # Same rows on both sides, whole width: one run.
    assert copy_runs(Chunk((0, 0), (4, 3)), Chunk((2, 0), (4, 3)), 1) == [(6, 0, 6)]
    # A column block: one run per row.
    assert copy_runs(Chunk((0, 0), (2, 4)), Chunk((0, 2), (2, 2)), 1) == [(2, 0, 2), (6, 2, 2)]
    assert copy_runs(Chunk((0,), (4,)), Chunk((4,), (4,)), 4) == []
    assert intersect(Chunk((0, 0), (2, 2)), Chunk((1, 1), (2, 2))) == Chunk((1, 1), (1, 1))


def test_a_table_with_a_gap_or_an_overlap_names_the_tensor_and_the_range():
    assert check_cover("layer.w", (10,), [Chunk((0,), (4,)), Chunk((6,), (4,))]) == [
        "layer.w: 2 of 10 elements are in no saved chunk, e.g. [4:6]"]
    problems = check_cover("layer.w", (10,), [Chunk((0,), (6,)), Chunk((4,), (6,))])
    assert problems == ["layer.w: chunks [0:6] and [4:10] overlap in [4:6]"]
    assert "outside" in check_cover("layer.w", (10,), [Chunk((8,), (4,))])[0]
    with pytest.raises(ValueError, match=r"layer.w: the saved chunks cover 16 of the 24 bytes of box \[2:8\]; \[4:6\]"):
        plan_reads("layer.w", [Chunk((0,), (4,)), Chunk((6,), (4,))], Chunk((2,), (6,)), 4)


def test_a_world_plan_refuses_another_models_tensors():
    tensors = {"w": ((8, 2), 4, [even_shard((8, 2), 2, r) for r in range(2)])}
    with pytest.raises(ValueError, match="v: the checkpoint holds no such tensor"):
        plan_world(tensors, {"v": even_shard((8, 2), 4, 0)})
    with pytest.raises(ValueError, match="does not fit the saved global shape"):
        plan_world(tensors, {"w": even_shard((9, 2), 4, 3)})
    plan = plan_world(tensors, {"w": even_shard((8, 2), 4, 1)})
    assert [r.chunk for r in plan["w"]] == [0]

"""shoal.torch.reshard_load's checks of a saved sharded state, before anything is read into the caller's
tensors: the saved ranks' chunk tables per tensor (whole, without overlap, one global shape and dtype, dense
shards), each refusal naming the tensor and the range or the mismatch. No session: the saved ranks'
records are built here as the skeletons hold them."""
import types

import pytest

from shoal.torch import reshard_load
from shoal.torch.reshard import Chunk
from shoal.torch.state_tree import TensorRecord


def shard(path, rows, cols, first_row, global_rows, dtype="float32", stride=None):
    return TensorRecord(0, dtype, (rows, cols), stride or (cols, 1), 0, False, True, path,
                        ((global_rows, cols), (first_row, 0)))


def saved(*ranks):
    return [types.SimpleNamespace(rank=r, records=recs) for r, recs in enumerate(ranks)]


W = ("model", "w")


def test_a_whole_table_gives_each_tensor_its_chunks_and_their_saved_ranks():
    tables = reshard_load._tensor_tables(saved([shard(W, 3, 2, 0, 5)], [shard(W, 2, 2, 3, 5)]))
    t = tables[W]
    assert t["shape"] == (5, 2) and t["dtype"] == "float32"
    assert t["chunks"] == [Chunk((0, 0), (3, 2)), Chunk((3, 0), (2, 2))]
    assert [rank for rank, _ in t["sources"]] == [0, 1]


@pytest.mark.parametrize("ranks,words", [
    # rows 3:4 are in no saved chunk
    (([shard(W, 3, 2, 0, 6)], [shard(W, 2, 2, 4, 6)]), ["state['model']['w']", "2 of 12 elements", "[3:4, 0:2]"]),
    # rows 2:3 saved twice
    (([shard(W, 3, 2, 0, 5)], [shard(W, 3, 2, 2, 5)]), ["state['model']['w']", "overlap", "[2:3, 0:2]"]),
    # another dtype on rank 1
    (([shard(W, 3, 2, 0, 5)], [shard(W, 2, 2, 3, 5, dtype="float16")]), ["state['model']['w']", "disagree"]),
    # another global shape on rank 1
    (([shard(W, 3, 2, 0, 5)], [shard(W, 3, 2, 3, 6)]), ["state['model']['w']", "disagree"]),
    # a shard that is not dense in its storage (a transposed view)
    (([shard(W, 3, 2, 0, 5, stride=(1, 3))], [shard(W, 2, 2, 3, 5)]), ["state['model']['w']", "not dense"]),
], ids=["gap", "overlap", "dtype", "global-shape", "not-dense"])
def test_a_table_that_does_not_make_up_its_tensor_is_refused_naming_it(ranks, words):
    with pytest.raises(ValueError) as e:
        reshard_load._tensor_tables(saved(*ranks))
    for w in words:
        assert w in str(e.value), (w, str(e.value))


def test_plain_nests_hold_no_dtensor():
    import torch
    assert not reshard_load.holds_dtensor({"a": [torch.zeros(2), (1, "x")], "b": {"c": torch.ones(1)}})

"""shoal.torch.state_tree: states flattened into a skeleton and storages, and rebuilt, with no session."""
import collections
import pickle

import pytest
import torch

import shoal.torch

from shoal.torch import state_tree
from shoal.torch._compat import storage_of


Point = collections.namedtuple("Point", "x y")
shoal.torch.add_safe_globals([Point])  # a class of the user's own: admitted once registered (safe_pickle)


def round_trip(state):
    """Flatten, copy every storage's bytes into fresh memory as a load would, rebuild."""
    flat = state_tree.flatten(state)
    tree, records, storages = state_tree.load_skeleton(flat.skeleton)
    buffers = []
    for i, st in enumerate(storages):
        buf = torch.empty(st.nbytes, dtype=torch.uint8)
        if st.nbytes:
            src = flat.storage_tensors[i]
            raw = torch.empty(0, dtype=src.dtype).set_(storage_of(src)).view(torch.uint8)
            buf.copy_(raw.reshape(-1)[: st.nbytes])
        buffers.append(buf)
    tensors = [state_tree.view_of(buffers[r.storage], r) for r in records]
    return state_tree.rebuild(tree, records, tensors), flat


def test_nested_containers_keep_their_types_and_plain_values():
    state = {"a": [1, "two", (3.0, None)], "od": collections.OrderedDict(b=torch.ones(2)),
             "dd": collections.defaultdict(list, {"k": [torch.zeros(1)]}), "p": Point(torch.ones(1), 7)}
    got, _ = round_trip(state)
    assert got["a"] == [1, "two", (3.0, None)]
    assert type(got["od"]) is collections.OrderedDict and torch.equal(got["od"]["b"], torch.ones(2))
    assert type(got["dd"]) is collections.defaultdict and got["dd"].default_factory is list
    assert type(got["p"]) is Point and got["p"].y == 7 and torch.equal(got["p"].x, torch.ones(1))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8,
                                   torch.uint8, torch.int16, torch.int32, torch.int64, torch.bool,
                                   torch.complex64])
def test_every_dtype_comes_back_bit_identical(dtype):
    src = (torch.randn(5, 3) * 100).to(dtype) if dtype != torch.bool else torch.randn(5, 3) > 0
    got, _ = round_trip({"t": src})
    assert got["t"].dtype == dtype
    assert torch.equal(got["t"], src)


def test_empty_and_non_contiguous_tensors():
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    state = {"empty": torch.empty(0), "empty2d": torch.empty(3, 0), "t": base.t(), "step": base[:, ::2]}
    got, _ = round_trip(state)
    assert got["empty"].shape == (0,) and got["empty2d"].shape == (3, 0)
    assert torch.equal(got["t"], base.t()) and got["t"].stride() == base.t().stride()
    assert torch.equal(got["step"], base[:, ::2])


def test_views_share_their_storage_again_and_it_is_saved_once():
    base = torch.arange(10, dtype=torch.float32)
    state = {"base": base, "view": base[2:5], "tied": [base, base]}
    got, flat = round_trip(state)
    assert len(flat.storages) == 1
    got["base"][3] = -1.0
    assert got["view"][1] == -1.0 and got["tied"][0] is not None
    assert got["tied"][0].data_ptr() == got["base"].data_ptr()


def test_parameters_stay_parameters_with_their_grad_flag():
    p = torch.nn.Parameter(torch.ones(3))
    got, _ = round_trip({"p": p, "frozen": torch.nn.Parameter(torch.ones(2), requires_grad=False)})
    assert isinstance(got["p"], torch.Tensor)


def test_a_value_that_is_neither_tensor_nor_picklable_names_its_key_path():
    state = {"model": {"layers": [1, 2, (lambda x: x)]}}
    with pytest.raises(TypeError) as e:
        state_tree.flatten(state)
    assert "state['model']['layers'][2]" in str(e.value) and "function" in str(e.value)


def test_a_container_class_that_cannot_be_pickled_names_its_key_path():
    Local = collections.namedtuple("Local", "x")
    with pytest.raises(TypeError) as e:
        state_tree.flatten({"outer": [Local(torch.ones(1))]})
    assert "state['outer'][0]" in str(e.value) and "Local" in str(e.value)


def test_sparse_tensors_are_refused_with_their_key_path():
    with pytest.raises(TypeError) as e:
        state_tree.flatten({"s": torch.eye(3).to_sparse()})
    assert "state['s']" in str(e.value)


def test_a_foreign_skeleton_is_refused_clearly():
    with pytest.raises(ValueError):
        state_tree.load_skeleton(b"not a pickle")
    with pytest.raises(ValueError) as e:
        state_tree.load_skeleton(pickle.dumps((99, {}, [], [])))
    assert "format 99" in str(e.value)

"""shoal.torch.Checkpointer through a real embedded agent: saves into this host's shared memory and
loads back, in place or not; bad input refused with nothing lost."""
import glob
import os

import pytest
import torch

import shoal
import shoal.torch
from shoal.torch._compat import storage_of


def trained_state(seed=0, width=16):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(8, width), torch.nn.ReLU(), torch.nn.Linear(width, 4))
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    model(torch.randn(5, 8)).pow(2).sum().backward()
    opt.step()
    return model, opt


def test_nothing_saved_loads_none(session):
    assert shoal.torch.Checkpointer(session, safe_timeout=0).load() is None


def test_a_saved_state_loads_back_bit_identical_with_its_structure(session):
    ck = shoal.torch.Checkpointer(session, safe_timeout=0)
    model, opt = trained_state()
    base = torch.arange(20, dtype=torch.float32).reshape(4, 5)
    state = {"model": model.state_dict(), "optim": opt.state_dict(), "step": 7,
             "extra": [torch.ones(3, dtype=torch.bfloat16), (torch.empty(0), base.t(), base[1])],
             "rng": torch.get_rng_state(), "note": "plain values ride along"}
    ck.save(7, state)
    step, got = ck.load()
    assert step == 7 and got["step"] == 7 and got["note"] == "plain values ride along"
    for k, v in model.state_dict().items():
        assert torch.equal(got["model"][k], v), k
    assert got["optim"]["state"][0]["exp_avg"].equal(opt.state_dict()["state"][0]["exp_avg"])
    assert got["optim"]["param_groups"] == opt.state_dict()["param_groups"]
    bf, (empty, t, row) = got["extra"]
    assert bf.dtype == torch.bfloat16 and torch.equal(bf, torch.ones(3, dtype=torch.bfloat16))
    assert empty.shape == (0,) and torch.equal(t, base.t()) and torch.equal(row, base[1])
    assert storage_of(row).data_ptr() == storage_of(t).data_ptr()  # views of one storage stay views
    assert torch.equal(got["rng"], torch.get_rng_state())


def test_the_newest_save_wins_and_an_older_one_survives_a_newer_save(session):
    ck = shoal.torch.Checkpointer(session, safe_timeout=0)
    for step in range(5):
        ck.save(step, {"w": torch.full((1000,), float(step))})
    step, got = ck.load()
    assert step == 4 and torch.equal(got["w"], torch.full((1000,), 4.0))


def test_load_into_fills_the_callers_tensors_in_place(session):
    ck = shoal.torch.Checkpointer(session, safe_timeout=0)
    model, opt = trained_state(seed=1)
    ck.save(3, {"model": model.state_dict(), "step": 3})
    fresh, _ = trained_state(seed=2)
    pointers = {k: v.data_ptr() for k, v in fresh.state_dict().items()}
    step, got = ck.load(into={"model": fresh.state_dict()})
    assert step == 3 and got["step"] == 3
    for k, v in fresh.state_dict().items():
        assert v.data_ptr() == pointers[k], "a new tensor for " + k
        assert torch.equal(v, model.state_dict()[k]), k
        assert got["model"][k].data_ptr() == pointers[k]


def test_load_into_a_non_contiguous_tensor_copies_into_it(session):
    ck = shoal.torch.Checkpointer(session, safe_timeout=0)
    ck.save(1, {"t": torch.arange(12.0).reshape(3, 4)})
    target = torch.zeros(4, 3).t()  # (3, 4), not contiguous
    ck.load(into={"t": target})
    assert torch.equal(target, torch.arange(12.0).reshape(3, 4))


def test_a_shape_or_dtype_mismatch_names_the_tensor_and_writes_nothing(session):
    ck = shoal.torch.Checkpointer(session, safe_timeout=0)
    ck.save(1, {"a": torch.ones(4), "b": torch.ones(2, 2), "c": torch.ones(3)})
    a, b, c = torch.zeros(4), torch.zeros(3, 2), torch.zeros(3, dtype=torch.float64)
    with pytest.raises(ValueError) as e:
        ck.load(into={"a": a, "b": b, "c": c})
    assert "state['b']" in str(e.value) and "float32[2, 2]" in str(e.value) and "state['c']" in str(e.value)
    assert torch.equal(a, torch.zeros(4)), "a tensor was written although the load was refused"


def test_a_value_that_cannot_be_saved_raises_type_error_with_its_path(session):
    ck = shoal.torch.Checkpointer(session, safe_timeout=0)
    ck.save(1, {"ok": torch.ones(1)})
    with pytest.raises(TypeError) as e:
        ck.save(2, {"ok": torch.ones(1), "loader": {"fn": lambda: 0}})
    assert "state['loader']['fn']" in str(e.value)
    assert ck.load()[0] == 1


def test_a_corrupted_newest_version_is_refused_by_its_checksum_and_the_older_step_loads(session, job):
    ck = shoal.torch.Checkpointer(session, safe_timeout=0)
    ck.save(1, {"w": torch.full((4096,), 1.0)})
    ck.save(2, {"w": torch.full((4096,), 2.0)})
    # Flip one byte of step 2's tensor data in its segment (the slot that holds the newest sealed step).
    flipped = 0
    for path in sorted(glob.glob("/dev/shm/shoal.%s.r0.v*" % job)):
        with open(path, "r+b") as f:
            data = f.read()
            needle = torch.full((4096,), 2.0).numpy().tobytes()[:64]
            at = data.find(needle)
            if at >= 0:
                f.seek(at + 10)
                f.write(bytes([data[at + 10] ^ 0xFF]))
                flipped += 1
    assert flipped == 1
    step, got = ck.load()
    assert step == 1 and torch.equal(got["w"], torch.full((4096,), 1.0))


def test_wait_says_whether_the_newest_save_is_safe(session):
    ck = shoal.torch.Checkpointer(session, safe_timeout=5)
    assert not ck.wait(0.1)  # nothing saved
    ck.save(1, {"w": torch.ones(10)})
    assert ck.wait(5.0)  # one host: no peer is named, so it is as safe as it gets at once


def test_connect_without_an_agent_names_the_control_socket(tmp_path):
    missing = str(tmp_path / "nobody.sock")
    with pytest.raises(shoal.Error) as e:
        shoal.Session.connect(control_path=missing)
    assert missing in str(e.value)


def test_prepare_readies_memory_and_the_next_save_still_loads(session):
    ck = shoal.torch.Checkpointer(session, safe_timeout=0)
    state = {"w": torch.ones(1 << 20), "step": 0}
    ck.prepare(state)
    ck.save(1, state)
    step, got = ck.load()
    assert step == 1 and torch.equal(got["w"], state["w"])

"""The Python API's contracts that need no second host: Session.start takes every SessionOptions field (one
table; a field added in C++ and not here fails this test), errors cross as types, the torch versions
shoal.torch accepts, submitted work on a world of one, and ElasticSampler under a user's DataLoader."""
import os
import re

import pytest
import torch

import shoal
import shoal.torch
from shoal.torch import _compat

HERE = os.path.dirname(os.path.abspath(__file__))
SESSION_HPP = os.path.join(HERE, "..", "..", "include", "shoal", "session.hpp")


def session_options_fields():
    """The field names of `struct SessionOptions` in include/shoal/session.hpp, in order."""
    text = open(SESSION_HPP).read()
    body = text[text.index("struct SessionOptions {"):]
    body = body[:body.index("\n};")]
    names = []
    for line in body.splitlines()[1:]:
        code = line.split("//")[0].strip()
        m = re.match(r"^[\w:<>, ]+?\s+(\w+)\s*(=|\{|;)", code)
        if m:
            names.append(m.group(1))
    return names


def test_session_start_takes_every_session_options_field():
    fields = session_options_fields()
    assert len(fields) > 20, fields  # the parse found the struct
    assert shoal.Session.option_names() == fields
    defaults = shoal.Session.option_defaults()
    assert set(defaults) == set(fields)
    assert defaults["view_timeout"] == 120.0 and defaults["evict_after"] == 3.0  # durations in seconds
    for name in fields:
        assert name in shoal.Session.start.__doc__


def test_session_start_refuses_unknown_and_mistyped_options():
    with pytest.raises(TypeError, match="unknown option 'nmae'.*name"):
        shoal.Session.start(nmae="x")
    with pytest.raises(TypeError, match="min_hosts"):
        shoal.Session.start(min_hosts="three")
    with pytest.raises(ValueError, match="view_timeout"):
        shoal.Session.start(view_timeout=-1)
    with pytest.raises(TypeError, match="keywords only"):
        shoal.Session.start("h0")


def test_errors_are_types():
    assert issubclass(shoal.ViewChanged, shoal.Error) and issubclass(shoal.Timeout, shoal.Error)
    assert issubclass(shoal.Error, RuntimeError)
    e = shoal.ViewChanged("view of epoch 3 changed: x")
    e.epoch = 3
    assert shoal.torch.is_view_change(e, None)
    wrapped = RuntimeError("a collective failed")
    wrapped.__cause__ = e
    assert shoal.torch.is_view_change(wrapped, None)
    # The text alone decides nothing: only types and the communicator's state do.
    assert not shoal.torch.is_view_change(RuntimeError("view of epoch 3 changed: x"), None)


@pytest.mark.parametrize("version,ok", [
    ("1.12.1", False), ("1.13.1", True), ("1.13.0+cpu", True), ("2.0.0", True), ("2.13.0+cpu", True),
    ("2.14.1+cu130", True), ("3.0.0", False), ("0.4.1", False),
])
def test_supported_torch_versions(version, ok):
    assert _compat.supported(version) == ok
    if not ok:
        with pytest.raises(ImportError, match="supports torch >= 1.13"):
            _compat.check_torch(version)


def test_submitted_work_completes_and_calls_back(session):
    comm = session.communicator()
    t = torch.arange(8, dtype=torch.float32)
    seen = []
    work = comm.allreduce_async(t.data_ptr(), t.numel(), "float32", "sum")
    work.on_done(seen.append)
    assert work.wait(10.0)
    assert work.done() and work.exception() is None
    assert seen == [None]
    assert t.tolist() == list(range(8))  # a world of one: the sum is the tensor itself


def test_init_process_group_without_an_agent_says_how_to_start_one(monkeypatch):
    monkeypatch.delenv("SHOAL_CONTROL", raising=False)
    with pytest.raises(RuntimeError, match="shoal agent"):
        shoal.torch.init_process_group()


def test_init_process_group_on_a_world_of_one(session):
    import torch.distributed as dist
    pg = shoal.torch.init_process_group(session)
    try:
        assert dist.get_rank() == 0 and dist.get_world_size() == 1
        assert isinstance(pg, shoal.torch.ProcessGroup)
        t = torch.ones(3)
        dist.all_reduce(t)
        assert t.tolist() == [1.0, 1.0, 1.0]
        with pytest.raises(RuntimeError, match="destroy_process_group"):
            shoal.torch.init_process_group(session)
    finally:
        dist.destroy_process_group()


def test_elastic_sampler_feeds_a_dataloader_with_workers():
    sampler = shoal.torch.ElasticSampler(100, 4, seed=1)
    sampler.set_world(1, 3)
    data = torch.arange(100)
    loader = torch.utils.data.DataLoader(data, batch_size=4, sampler=sampler, num_workers=2)
    batches = [b.tolist() for b in loader]
    assert len(batches) == 100 // 12 == len(sampler) // 4
    order = sampler._epoch_order().tolist()
    assert batches[0] == order[4:8] and batches[1] == order[16:20]  # rank 1's block of each step
    # After two steps of that world, and one of a world of two, the next iterator starts where they ended.
    sampler.advance(3)
    sampler.advance(3)
    sampler.advance(2)
    sampler.set_world(0, 2)
    assert next(iter(loader)).tolist() == order[32:36]


def test_a_group_whose_view_changed_refuses_at_once_and_says_what_to_do(session):
    import torch.distributed as dist
    pg = shoal.torch.init_process_group(session)
    try:
        pg.comm.abort("a member left (test)")
        with pytest.raises(shoal.ViewChanged, match="init_process_group"):
            dist.all_reduce(torch.ones(2))
        # A collective already submitted fails through its Work, as a typed error.
        assert shoal.torch.is_view_change(RuntimeError("wrapped"), pg.comm)
    finally:
        dist.destroy_process_group()


def test_elastic_refuses_a_dataloader_without_its_sampler(session):
    model = torch.nn.Linear(2, 1)
    sampler = shoal.torch.ElasticSampler(64, 4)
    job = shoal.torch.Elastic(session, model, torch.optim.SGD(model.parameters(), lr=0.1), sampler=sampler)
    data = torch.utils.data.TensorDataset(torch.randn(64, 2), torch.randn(64, 1))
    with pytest.raises(ValueError, match="sampler=sampler"):
        next(job.batches(torch.utils.data.DataLoader(data, batch_size=4, shuffle=True)))
    with pytest.raises(ValueError, match="batch_size=4"):
        next(job.batches(torch.utils.data.DataLoader(data, batch_size=8, sampler=sampler)))
    job.close()

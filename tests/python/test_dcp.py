"""torch.distributed.checkpoint over shoal's memory (shoal.torch.dcp): dcp.save with ShoalStorageWriter and
dcp.load with ShoalStorageReader, for an FSDP2 model with AdamW on real processes with embedded agents on
loopback (same world: bit-exact; another world: resharded by DCP's planner once Session.read_ranges exists,
a clear refusal before), and the refusals on one host: another model, a step that is not there, a version
of another kind, a forged table."""
import json
import os
import subprocess

import pytest
import torch

from agents import free_ports
from conftest import PYTHON, child_env

TORCH = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])
pytestmark = pytest.mark.skipif(TORCH < (2, 6), reason="DCP storage over shoal is for torch 2.x (FSDP2 on CPU and "
                                                         "DCP's StorageWriter/Reader interface); this is torch 1.13")

HERE = os.path.dirname(os.path.abspath(__file__))
# What dcp.save/load raise when a rank failed (DCP's CheckpointException, a BaseException, quoting each rank's).
_Failed = BaseException
WORKER = os.path.join(HERE, "dcp_worker.py")


def run_world(task, world, job, hosts=None, timeout=120):
    """Runs `world` ranks of dcp_worker.py (on hosts h0, h1, ... or those named); each rank's one result line,
    after all exited 0."""
    port0 = free_ports(world + 1)[0]
    hosts = hosts or ["h%d" % r for r in range(world)]
    procs = []
    try:
        for r in range(world):
            procs.append(subprocess.Popen([PYTHON, WORKER, task, str(r), str(world), str(port0), job, ",".join(hosts)],
                                          env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        rows = []
        for r, p in enumerate(procs):
            out, err = p.communicate(timeout=timeout)
            assert p.returncode == 0, "rank %d of %s exited %s:\n%s" % (r, task, p.returncode,
                                                                       err.decode(errors="replace")[-6000:])
            lines = [json.loads(l) for l in out.decode().splitlines() if l.startswith("{")]
            row = [d for d in lines if d.get("event") == task]
            assert len(row) == 1, lines
            assert "crash" not in row[0], row[0]["crash"]
            rows.append(row[0])
        return rows
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def test_fsdp2_state_saved_with_dcp_loads_back_bit_exact_on_the_same_world(job):
    """3 ranks: each rank's shards (and the values DCP saves once, on one rank) go to shoal's memory; a fresh
    model of other values loads them and trains on exactly as the saving model did."""
    rows = run_world("same", 3, job)
    for d in rows:
        assert d["step"] == 3 and d["source"] == "local", d
        assert d["moved"] and d["params_equal"] and d["optim_equal"], d
        assert d["progress"] == {"epoch": 7, "name": "run-a"}, d


def test_the_coordinators_host_lost_the_survivor_and_a_newcomer_load_from_replicas(job):
    """2 ranks save and are killed; a world of 2 without h0 (rank 0's host, DCP's coordinator) loads: h1, now
    rank 0, reads saved rank 0's version from the replica it holds, the newcomer h2 fetches saved rank 1's from
    h1; DCP's metadata comes from any version. The full parameters are the saved ones."""
    saved = run_world("save", 2, job)
    assert all(d["safe"] for d in saved), saved
    loaded = run_world("load", 2, job, hosts=["h1", "h2"])
    for d in loaded:
        assert "error" not in d, d["error"]
        assert d["step"] == 3 and d["params"] == saved[0]["params"], d
        assert d["progress"] == {"epoch": 7, "name": "run-a"}


def _has_ranged_reads():
    import shoal
    return all(hasattr(shoal.Session, n) for n in ("agree_restore", "version_buffers", "read_ranges"))


@pytest.mark.skipif(not _has_ranged_reads(), reason="loading onto another world needs shoal.Session.read_ranges "
                                                    "(issue 38's ranged reads), which this build lacks")
def test_a_dcp_checkpoint_of_two_ranks_loads_onto_three(job):
    """2 ranks save; a world of 3 (the same two hosts and a new one) loads: DCP's planner reshards, each rank
    reads only its ranges, and the full parameters are the saved ones."""
    saved = run_world("save", 2, job)
    assert all(d["safe"] for d in saved), saved
    loaded = run_world("load", 3, job)
    for d in loaded:
        assert "error" not in d, d["error"]
        assert d["step"] == 3 and d["params"] == saved[0]["params"], d
        assert d["progress"] == {"epoch": 7, "name": "run-a"}


@pytest.mark.skipif(_has_ranged_reads(), reason="this build reads ranges: the load onto another world is tested")
def test_a_load_onto_another_world_is_refused_clearly_until_ranged_reads_exist(job):
    """1 rank saves, a world of 2 loads: refused on every rank before DCP plans a read, nothing written."""
    saved = run_world("save", 1, job)
    assert all(d["safe"] for d in saved), saved
    loaded = run_world("load", 2, job)
    for d in loaded:
        assert "error" in d, d
        assert "saved by a world of 1 ranks and this world has 2" in d["error"], d["error"]
        assert "read_ranges" in d["error"] and d["untouched"], d


# --- refusals on one host (world 1, no process group: DCP runs without collectives) ---

def _model(out_features=4, seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(8, 6), torch.nn.ReLU(), torch.nn.Linear(6, out_features))


def _save(session, step, model):
    import torch.distributed.checkpoint as dcp
    from shoal.torch.dcp import ShoalStorageWriter
    dcp.save({"model": model.state_dict(), "meta": {"epoch": step}}, storage_writer=ShoalStorageWriter(session),
             checkpoint_id="step-%d" % step)


def _load(session, model, step=None):
    import torch.distributed.checkpoint as dcp
    from shoal.torch.dcp import ShoalStorageReader
    state = {"model": model.state_dict(), "meta": {"epoch": -1}}
    reader = ShoalStorageReader(session, step=step)
    dcp.load(state, storage_reader=reader)
    return reader, state


def _snapshot(model):
    return [t.clone() for t in model.state_dict().values()]


def _unchanged(model, snap):
    return all(torch.equal(a, b) for a, b in zip(snap, model.state_dict().values()))


def test_an_older_step_loads_when_asked_for(session):
    first, second = _model(seed=0), _model(seed=1)
    _save(session, 5, first)
    _save(session, 6, second)
    into = _model(seed=2)
    reader, state = _load(session, into, step=5)
    assert reader.loaded_step == 5 and state["meta"] == {"epoch": 5}
    assert all(torch.equal(a, b) for a, b in zip(first.state_dict().values(), into.state_dict().values()))


def test_one_host_round_trip_and_a_checkpoint_of_another_model_is_refused_with_nothing_written(session):
    saved = _model(seed=0)
    _save(session, 5, saved)
    into = _model(seed=1)
    reader, state = _load(session, into)
    assert reader.loaded_step == 5 and state["meta"] == {"epoch": 5}
    assert all(torch.equal(a, b) for a, b in zip(saved.state_dict().values(), into.state_dict().values()))

    other = _model(out_features=3, seed=2)  # the last layer's shapes differ
    snap = _snapshot(other)
    with pytest.raises(_Failed, match=r"(?i)size mismatch|shape"):
        _load(session, other)
    assert _unchanged(other, snap)
    extra = torch.nn.Sequential(_model(seed=3), torch.nn.Linear(4, 4))  # keys the checkpoint lacks
    snap = _snapshot(extra)
    with pytest.raises(_Failed, match=r"(?i)missing key|not found|0\.0\.weight"):
        _load(session, extra)
    assert _unchanged(extra, snap)


def test_a_step_that_is_not_there_and_a_version_of_another_kind_are_refused(session):
    import shoal.torch
    _save(session, 5, _model())
    into = _model(seed=1)
    snap = _snapshot(into)
    with pytest.raises(_Failed, match="no step at or below step 4 \\(the one asked for\\) is complete"):
        _load(session, into, step=4)
    assert _unchanged(into, snap)
    with pytest.raises(_Failed, match="step 7 is not held in shoal's memory \\(the newest older step is 5\\)"):
        _load(session, into, step=7)
    assert _unchanged(into, snap)
    shoal.torch.Checkpointer(session, safe_timeout=0).save(6, {"w": torch.ones(3)})
    with pytest.raises(_Failed, match="step 6 was not saved by shoal.torch.dcp.ShoalStorageWriter"):
        _load(session, into)
    assert _unchanged(into, snap)


def test_a_forged_table_is_refused_unread_and_the_previous_step_loads(session, tmp_path):
    """A version of step 9 whose table would run a command when unpickled: refused (never parsed into code),
    and the load falls back to step 5."""
    import pickle
    saved = _model()
    _save(session, 5, saved)
    marker = tmp_path / "ran"

    class RunsACommand:
        def __reduce__(self):
            return (os.system, ("touch %s" % marker,))

    forged = pickle.dumps({"format": "shoal.dcp/1", "saved_world": 1, "items": [RunsACommand()]})
    save = session.begin_save(session.communicator(), 9, [("dcp", len(forged))])
    save.write("dcp", forged)
    save.commit()
    into = _model(seed=1)
    reader, _ = _load(session, into)
    assert reader.loaded_step == 5 and not marker.exists()
    assert all(torch.equal(a, b) for a, b in zip(saved.state_dict().values(), into.state_dict().values()))


# --- the table every version holds, and the ranges a read takes (pure) ---

def _global_plans(state, world=1):
    from torch.distributed.checkpoint.default_planner import DefaultSavePlanner
    plans = []
    for rank in range(world):
        planner = DefaultSavePlanner()
        planner.set_up_planner(state, is_coordinator=rank == 0)
        plans.append(planner.create_local_plan())
    coordinator = DefaultSavePlanner()
    coordinator.set_up_planner(state, is_coordinator=True)
    return coordinator.create_global_plan(plans)


def test_the_table_rebuilds_the_metadata_dcp_records():
    from shoal.torch import dcp_table
    state = {"model": _model().state_dict(), "meta": {"epoch": 3, "tag": "x"}}
    plans, metadata = _global_plans(state)
    table = dcp_table.parse(dcp_table.build(plans).encode())
    rebuilt = table.metadata()
    assert rebuilt.state_dict_metadata == metadata.state_dict_metadata
    assert rebuilt.planner_data == metadata.planner_data
    for rec in table.records:
        assert rebuilt.storage_data[rec.key()] is rec and rec.rank == 0


@pytest.mark.parametrize("doc, why", [
    (["not", "a", "dict"], "not a checkpoint of shoal.torch.dcp.ShoalStorageWriter"),
    ({"format": "other/1", "saved_world": 1, "items": []}, "not a checkpoint of shoal.torch.dcp"),
    ({"format": "shoal.dcp/1", "saved_world": 0, "items": []}, "saved world 0 is out of bounds"),
    ({"format": "shoal.dcp/1", "saved_world": 1, "items": [("a", None, None, "bytes", 1, "d0", None)]},
     "names saved rank 1 of a world of 1"),
    ({"format": "shoal.dcp/1", "saved_world": 1, "items": [("a", None, None, "bytes", 0, "x/../y", None)]},
     "names buffer"),
    ({"format": "shoal.dcp/1", "saved_world": 1, "items": [("a", None, None, "bytes", 0, "d0", None),
                                                            ("b", None, None, "bytes", 0, "d0", None)]},
     "reuses buffer d0"),
    ({"format": "shoal.dcp/1", "saved_world": 1, "items": [
        ("w", (0,), 0, "shard", 0, "d0", ("float32", "strided", False, "contiguous_format", False,
                                          (4,), (2,), (3,)))]}, "does not fit the tensor's size"),
    ({"format": "shoal.dcp/1", "saved_world": 1, "items": [
        ("w", None, 0, "tensor", 0, "d0", ("float32", "strided", False, "Size", False,
                                           (4,), (0,), (4,)))]}, "malformed tensor properties"),
    ({"format": "shoal.dcp/1", "saved_world": 1, "items": [], "planner_data": [1]}, "planner data is a list"),
])
def test_a_table_out_of_bounds_is_refused_naming_what(doc, why):
    import pickle
    from shoal.torch import dcp_table
    with pytest.raises(dcp_table.TableRefused, match=why):
        dcp_table.parse(pickle.dumps(doc))


def test_a_table_that_would_run_code_is_refused_unrun(tmp_path):
    import pickle
    from shoal.torch import dcp_table
    marker = tmp_path / "ran"

    class RunsACommand:
        def __reduce__(self):
            return (os.system, ("touch %s" % marker,))

    with pytest.raises(dcp_table.TableRefused, match="does not parse.*system"):
        dcp_table.parse(pickle.dumps({"format": "shoal.dcp/1", "saved_world": 1, "items": [RunsACommand()]}))
    assert not marker.exists()


@pytest.mark.parametrize("chunk, offsets, lengths, runs", [
    ((4, 6), (0, 0), (4, 6), [(0, 0, 96)]),            # the whole chunk: one run
    ((4, 6), (1, 0), (2, 6), [(24, 0, 48)]),           # whole rows: one run
    ((4, 6), (1, 2), (2, 3), [(32, 0, 12), (56, 12, 12)]),  # a column block: a run per row
    ((4, 6), (3, 0), (0, 6), []),                      # nothing
])
def test_a_read_takes_only_the_byte_ranges_of_its_box(chunk, offsets, lengths, runs):
    from shoal.torch import dcp_table
    from shoal.torch.dcp_cross_world import read_region, runs_for
    rec = dcp_table.Record("w", (0, 0), 0, "shard", 0, "d0", torch.float32, torch.strided, False,
                           torch.contiguous_format, False, (8, 6), (0, 0), chunk)
    assert runs_for(rec, offsets, lengths) == runs
    raw = torch.arange(24, dtype=torch.float32).view(torch.uint8)
    box = torch.zeros(lengths, dtype=torch.float32)
    flat = box.view(-1).view(torch.uint8)
    for src, dst, n in runs:
        flat[dst:dst + n] = raw[src:src + n]
    assert torch.equal(box, read_region(raw, rec, offsets, lengths))
    with pytest.raises(ValueError, match="lies outside the saved chunk"):
        runs_for(rec, (3, 0), (2, 6))

"""The `shoal` process group with 4 real processes on loopback, each with its own embedded agent: every
collective DDP and FSDP2 call on it gives exact results, its refusals say what to do, and DDP and FSDP2
(fully_shard) train to the same parameters as over torch's own gloo backend from the same seeds."""
import json
import os
import subprocess

import pytest
import torch

from agents import free_ports
from conftest import PYTHON, child_env, remove_segments

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "pg_worker.py")
WORLD = 4
TORCH = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])


def run_world(task, backend, job, timeout=240):
    """Runs WORLD ranks of pg_worker.py; returns each rank's JSON lines, after all exited 0."""
    port0 = free_ports(WORLD + 1)[0]
    procs = []
    try:
        for r in range(WORLD):
            procs.append(subprocess.Popen([PYTHON, WORKER, task, backend, str(r), str(WORLD), str(port0), job],
                                          env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        outs = []
        for r, p in enumerate(procs):
            out, err = p.communicate(timeout=timeout)
            assert p.returncode == 0, "rank %d of %s/%s exited %s:\n%s" % (r, task, backend, p.returncode,
                                                                          err.decode(errors="replace")[-6000:])
            outs.append([json.loads(l) for l in out.decode().splitlines() if l.startswith("{")])
        return outs
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


FSDP2 = TORCH >= (2, 6)  # fully_shard on CPU and Gloo
NO_FSDP2 = "FSDP2 (fully_shard) on CPU and Gloo needs a torch 2.x newer than this one"


@pytest.fixture(scope="module")
def worlds():
    """Two worlds of WORLD processes, each running every task in turn on one process group (a world's start
    costs seconds of imports and joins): {"shoal": each rank's lines, "gloo": each rank's lines}."""
    name = "pg%d" % os.getpid()
    remove_segments(name)
    try:
        shoal_tasks = ["collectives", "ddp"] + (["fsdp2", "fsdp2_ckpt"] if FSDP2 else [])
        gloo_tasks = ["ddp"] + (["fsdp2"] if FSDP2 else [])
        yield {"shoal": run_world("+".join(shoal_tasks), "shoal", name),
               "gloo": run_world("+".join(gloo_tasks), "gloo", name + "g")}
    finally:
        remove_segments(name)


def test_every_collective_gives_exact_results_and_refusals_say_what_to_do(worlds):
    outs = worlds["shoal"]
    for r, lines in enumerate(outs):
        group = [d for d in lines if d.get("event") == "group"][0]
        assert group["backend"] == "shoal"
        assert group["name"], "the group has a name (DeviceMesh and FSDP2 need one)"
        checks = [d for d in lines if d.get("event") == "checks"][0]
        failed = [k for k, ok in checks["results"].items() if not ok]
        assert not failed, "rank %d: wrong results for %s" % (r, failed)
        refusals = checks["refusals"]
        assert "torch.bool" in refusals["bool_refused"], refusals
        assert "destroy_process_group" in refusals["second_init"], refusals
        if "premul_sum" in refusals:
            assert "set_force_sum_reduction_for_comms" in refusals["premul_sum"], refusals


def _params(outs, task):
    rows = [[d for d in lines if d.get("event") == "params" and d.get("task") == task] for lines in outs]
    assert all(len(r) == 1 for r in rows), "every rank reports the parameters of %s once: %s" % (task, rows)
    crcs = {r[0]["crc"] for r in rows}
    assert len(crcs) == 1, "ranks ended %s with different parameters: %s" % (task, crcs)
    return rows[0][0]["params"]


def _max_difference(a, b):
    assert [len(x) for x in a] == [len(x) for x in b]
    return max(max(abs(x - y) for x, y in zip(pa, pb)) for pa, pb in zip(a, b))


def test_ddp_over_shoal_trains_as_over_gloo(worlds):
    assert _max_difference(_params(worlds["shoal"], "ddp"), _params(worlds["gloo"], "ddp")) < 1e-5


@pytest.mark.skipif(not FSDP2, reason=NO_FSDP2)
def test_fsdp2_over_shoal_trains_as_over_gloo(worlds):
    assert _max_difference(_params(worlds["shoal"], "fsdp2"), _params(worlds["gloo"], "fsdp2")) < 1e-5


@pytest.mark.skipif(not FSDP2, reason=NO_FSDP2)
def test_fsdp2_shards_save_and_load_back_in_place(worlds):
    """Each rank's Checkpointer saves its shards of FSDP2's DTensors (model and AdamW state) with what DCP
    records (global shape, offsets); a load on the same world puts them back into the live DTensors."""
    rows = [d for lines in worlds["shoal"] for d in lines if d.get("event") == "fsdp2_ckpt"]
    assert len(rows) == WORLD
    for d in rows:
        assert d["step"] == 4 and d["moved"] and d["back"] and d["dtensors"], d


@pytest.mark.skipif(TORCH < (2, 0), reason="torch 1.13 does not take a Python Work's future for DDP: the shoal group "
                    "keeps torch's wrapper there, whose wait() cannot raise")
def test_a_failed_collective_raises_from_a_synchronous_call_and_the_program_exits_by_it():
    """dist.broadcast(t) whose collective fails (the root aborted its communicator) raises ViewChanged and
    leaves t as it was: torch's own wrapper of a future returned from wait() as if it had succeeded, and DCP
    then unpickled bytes the root never sent. A program that ends by that error exits 1 with its traceback,
    not SIGABRT ("terminate called ...") from a completion callback racing the interpreter's exit."""
    name = "pgf%d" % os.getpid()
    port0 = free_ports(3)[0]
    remove_segments(name)
    procs = [subprocess.Popen([PYTHON, WORKER, "failed_collectives", "shoal", str(r), "2", str(port0), name],
                              env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE) for r in range(2)]
    try:
        results = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        remove_segments(name)
    (out0, err0), (out1, err1) = results
    assert procs[0].returncode == 0, err0.decode(errors="replace")[-4000:]
    text1 = err1.decode(errors="replace")
    assert procs[1].returncode == 1, "rank 1 exited %s:\n%s" % (procs[1].returncode, text1[-4000:])
    assert "terminate called" not in text1 and "ViewChanged" in text1, text1[-4000:]
    seen = [json.loads(l) for l in out1.decode().splitlines() if '"failed_collectives"' in l][0]
    assert seen["broadcast"] == "ViewChanged" and seen["broadcast_tensor_kept"], seen
    assert seen["all_reduce"] == "ViewChanged" and seen["all_reduce_async"] == "ViewChanged", seen
    assert seen["tensor_kept"], seen

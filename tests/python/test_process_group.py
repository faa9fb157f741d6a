"""The `shoal` process group with 4 real processes on loopback, each with its own embedded agent: every
collective DDP and FSDP2 call on it gives exact results, its refusals say what to do, and DDP and FSDP2
(fully_shard) train to the same parameters as over torch's own gloo backend from the same seeds."""
import json
import os
import subprocess

import pytest
import torch

from agents import free_ports
from conftest import PYTHON, child_env

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


def test_every_collective_gives_exact_results_and_refusals_say_what_to_do(job):
    outs = run_world("collectives", "shoal", job)
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


def _params(outs):
    crcs = {lines[-1]["crc"] for lines in outs}
    assert len(crcs) == 1, "ranks ended with different parameters: %s" % crcs
    return outs[0][-1]["params"]


def _max_difference(a, b):
    assert [len(x) for x in a] == [len(x) for x in b]
    return max(max(abs(x - y) for x, y in zip(pa, pb)) for pa, pb in zip(a, b))


def test_ddp_over_shoal_trains_as_over_gloo(job):
    shoal_params = _params(run_world("ddp", "shoal", job))
    gloo_params = _params(run_world("ddp", "gloo", job + "g"))
    assert _max_difference(shoal_params, gloo_params) < 1e-5


@pytest.mark.skipif(TORCH < (2, 6), reason="FSDP2 (fully_shard) on CPU and Gloo needs a torch 2.x newer than this one")
def test_fsdp2_over_shoal_trains_as_over_gloo(job):
    shoal_params = _params(run_world("fsdp2", "shoal", job))
    gloo_params = _params(run_world("fsdp2", "gloo", job + "g"))
    assert _max_difference(shoal_params, gloo_params) < 1e-5


@pytest.mark.skipif(TORCH < (2, 6), reason="FSDP2 (fully_shard) on CPU and Gloo needs a torch 2.x newer than this one")
def test_fsdp2_shards_save_and_load_back_in_place(job):
    """Each rank's Checkpointer saves its shards of FSDP2's DTensors (model and AdamW state) with what DCP
    records (global shape, offsets); a load on the same world puts them back into the live DTensors."""
    outs = run_world("fsdp2_ckpt", "shoal", job)
    rows = [d for lines in outs for d in lines if d.get("event") == "fsdp2_ckpt"]
    assert len(rows) == WORLD
    for d in rows:
        assert d["step"] == 4 and d["moved"] and d["back"] and d["dtensors"], d

"""Restoring FSDP2 state onto a world of another size from memory: a world saves its shards with
Checkpointer (model and AdamW), its processes end without leaving (their hosts' memory keeps the slots and
replicas), and a world of another size loads into freshly built FSDP2 state: each rank reads only the saved
byte ranges its new shards overlap (Session.read_ranges), and the full (gathered) parameters and moments
equal the saved ones bit for bit. A model of another shape is refused first, with nothing written."""
import json
import os
import subprocess

import pytest
import torch

from agents import free_ports
from conftest import PYTHON, child_env

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "pg_worker.py")
TORCH = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])

pytestmark = pytest.mark.skipif(TORCH < (2, 6), reason="FSDP2 (fully_shard) on CPU and Gloo needs torch 2.6 or newer")


def run_world(task, world, job, timeout=120):
    """world ranks of pg_worker.py TASK over the shoal group; each rank's JSON lines, after all exited 0."""
    port0 = free_ports(world + 1)[0]
    procs = []
    try:
        for r in range(world):
            procs.append(subprocess.Popen([PYTHON, WORKER, task, "shoal", str(r), str(world), str(port0), job],
                                          env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        outs = []
        for r, p in enumerate(procs):
            out, err = p.communicate(timeout=timeout)
            assert p.returncode == 0, "rank %d of %s exited %s:\n%s" % (r, task, p.returncode,
                                                                       err.decode(errors="replace")[-6000:])
            outs.append([json.loads(l) for l in out.decode().splitlines() if l.startswith("{")])
        return outs
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def rows(outs, event):
    return [d for lines in outs for d in lines if d.get("event") == event]


def check_loads(loads, world, step, note, digest):
    assert len(loads) == world
    for d in loads:
        assert d["step"] == step and d["note"] == note and d["dtensors"], d
        assert d["digest"] == digest, "rank %d's resharded state differs from the saved one" % d["rank"]
        # The model of another shape: refused naming the tensor, before any of its tensors was written.
        assert "2.weight" in d["refused"] and "[4, 30]" in d["refused"], d["refused"]
        assert d["untouched"], d


def test_fsdp2_state_loads_resharded_onto_a_smaller_then_a_larger_world_bit_exactly(job):
    # 4 ranks save step 2; 3 ranks load it (4 -> 3) and save it again as step 5; 4 ranks load that (3 -> 4).
    saves = rows(run_world("reshard_save", 4, job), "reshard_save")
    assert len(saves) == 4 and len({d["digest"] for d in saves}) == 1
    digest = saves[0]["digest"]
    check_loads(rows(run_world("reshard_load_save", 3, job), "reshard_load"), 3, 2, "w4", digest)
    check_loads(rows(run_world("reshard_load", 4, job), "reshard_load"), 4, 5, "w3", digest)

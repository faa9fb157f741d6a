"""Restoring FSDP2 state onto a world of another size from memory: a world saves its shards with
Checkpointer (model and AdamW), its processes end without leaving (their hosts' memory keeps the slots and
replicas), and a world of another size loads into freshly built FSDP2 state: each rank reads only the saved
byte ranges its new shards overlap (Session.read_ranges), and the full (gathered) parameters and moments
equal the saved ones bit for bit. A model of another shape is refused first, with nothing written. A step one
of whose saved ranks is corrupt on every host that holds it is skipped by every rank: all load the older step."""
import glob
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


def check_loads(loads, world, step, note, digest, saved_world):
    assert len(loads) == world
    for d in loads:
        assert d["step"] == step and d["note"] == note and d["dtensors"], d
        assert d["digest"] == digest, "rank %d's resharded state differs from the saved one" % d["rank"]
        # The model of another shape: refused naming the tensor, before any of its tensors was written.
        assert "2.weight" in d["refused"] and "[4, 30]" in d["refused"], d["refused"]
        assert d["untouched"], d
        # Checkpointer.last_reshard: the load's reads, split by where they came from, adding up.
        s = d["stats"]
        assert s["step"] == step and s["saved_world"] == saved_world, s
        reads = s["reads"]
        assert reads and len({r["saved_rank"] for r in reads}) == len(reads), s
        assert s["local_bytes"] == sum(r["bytes"] for r in reads if r["source"] == "local"), s
        assert s["remote_bytes"] == sum(r["bytes"] for r in reads if r["source"] != "local"), s
        assert s["local_bytes"] + s["remote_bytes"] > 0, s
        for kind in ("local", "remote"):
            assert (s[kind + "_s"] > 0) == (s[kind + "_bytes"] > 0) and s[kind + "_s"] <= s["total_s"], s
    # Some saved shard lives on no host of the loading world's rank that needs it: it came from a peer.
    assert sum(d["stats"]["remote_bytes"] for d in loads) > 0, [d["stats"] for d in loads]


def test_fsdp2_state_loads_resharded_onto_a_smaller_then_a_larger_world_bit_exactly(job):
    # 4 ranks save step 2; 3 ranks load it (4 -> 3) and save it again as step 5; 4 ranks load that (3 -> 4).
    saves = rows(run_world("reshard_save", 4, job), "reshard_save")
    assert len(saves) == 4 and len({d["digest"] for d in saves}) == 1
    digest = saves[0]["digest"]
    check_loads(rows(run_world("reshard_load_save", 3, job), "reshard_load"), 3, 2, "w4", digest, 4)
    check_loads(rows(run_world("reshard_load", 4, job), "reshard_load"), 4, 5, "w3", digest, 3)


def _flip_every_copy(job, needle_hex):
    """Flips one byte after `needle` in every segment of the job that holds it (a rank's slot, a peer's
    replica); returns how many."""
    needle = bytes.fromhex(needle_hex)
    flipped = 0
    for path in sorted(glob.glob("/dev/shm/shoal.%s*" % job)):
        with open(path, "r+b") as f:
            data = f.read()
            at = data.find(needle)
            while at >= 0:
                f.seek(at + 10)
                f.write(bytes([data[at + 10] ^ 0xFF]))
                flipped += 1
                at = data.find(needle, at + 1)
    return flipped


def test_a_step_whose_saved_rank_is_corrupt_everywhere_loads_the_older_step_on_every_rank(job):
    # 2 ranks save steps 2 and 3; saved rank 1's step-3 bytes are damaged in its slot and in the peer's replica;
    # 3 ranks load: the ranks reading saved rank 1 find it corrupt, and every rank (also rank 0, whose reads
    # all verified) goes on to step 2 and loads it exactly.
    saves = rows(run_world("two_steps_save", 2, job), "two_steps_save")
    assert len(saves) == 2 and len({d["digest2"] for d in saves}) == 1 and saves[0]["digest2"] != saves[0]["digest3"]
    rank1 = [d for d in saves if d["rank"] == 1][0]
    assert _flip_every_copy(job, rank1["needle"]) >= 2, "saved rank 1's step 3 should be in its slot and a replica"
    loads = rows(run_world("load_past_corruption", 3, job), "load_past_corruption")
    assert len(loads) == 3
    for d in loads:
        assert d["step"] == 2 and d["digest"] == saves[0]["digest2"], d
        assert d["fell_back"], d
    assert any("step 3 cannot be loaded" in m and "rank 1" in m for d in loads for m in d["corrupt"]), loads

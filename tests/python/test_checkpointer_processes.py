"""Checkpointer across processes: a save cut short by SIGKILL, ranks that saved different steps, and a
/dev/shm too small for the next save. Each process runs its own embedded agent on loopback."""
import os
import shutil

import pytest

from conftest import run_child, run_pair

# A single-host worker: argv = job, then what to do. Prints JSON lines.
SOLO = r'''
import json, os, signal, sys, zlib
import torch, shoal, shoal.torch
job, action = sys.argv[1], sys.argv[2]
s = shoal.Session.start(insecure=True, name="solo", bind="127.0.0.1:0", control_path="none", cluster=job, job=job, log_spec="error")
s.wait_for_view(0, 30.0)
ck = shoal.torch.Checkpointer(s, safe_timeout=0)

def state(step, mib):
    g = torch.Generator().manual_seed(step)
    return {"w": torch.randn(mib * 262144, generator=g), "step": step}

def crc(t):
    return zlib.crc32(t.numpy().tobytes())

if action == "save-then-die-mid-save":
    ck.save(1, state(1, 8))
    print(json.dumps({"saved": 1, "crc": crc(state(1, 8)["w"])}), flush=True)
    # The next save copies half its tensors, then the process is killed before commit.
    cls = shoal.CheckpointSave
    real = cls.write_many
    def half_then_die(self, parts):
        buf = self.buffer("s0")
        buf[: len(buf) // 2] = b"\xab" * (len(buf) // 2)  # half of the new bytes are in
        os.kill(os.getpid(), signal.SIGKILL)
    cls.write_many = half_then_die
    ck.save(2, state(2, 8))
elif action == "load":
    got = ck.load()
    print(json.dumps({"step": None if got is None else got[0],
                      "crc": None if got is None else crc(got[1]["w"])}), flush=True)
elif action == "fill-shm":
    ck.save(1, state(1, 4))
    print(json.dumps({"saved": 1, "crc": crc(state(1, 4)["w"])}), flush=True)
    try:
        ck.save(2, state(2, 24))
        print(json.dumps({"error": None}), flush=True)
    except shoal.Error as e:
        print(json.dumps({"error": str(e)}), flush=True)
    got = ck.load()
    print(json.dumps({"step": got[0], "crc": crc(got[1]["w"])}), flush=True)
s.leave()
'''


def test_a_save_killed_before_commit_leaves_the_previous_step_loadable(job):
    proc, lines = run_child(SOLO, job, "save-then-die-mid-save", check=False)
    assert proc.returncode == -9, proc.stderr.decode()
    assert lines[0]["saved"] == 1
    _, loaded = run_child(SOLO, job, "load")
    assert loaded[0] == {"step": 1, "crc": lines[0]["crc"]}


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                    reason="needs root and unshare(1) for a private, small /dev/shm")
def test_a_full_dev_shm_gives_a_clear_error_and_the_earlier_step_stays(job):
    # A mount namespace of its own with a 20 MiB /dev/shm: step 1 (4 MiB, twice: two slots) fits,
    # step 2 (24 MiB) does not.
    prefix = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
              'mount -t tmpfs -o size=20m tmpfs /dev/shm && exec "$@"', "sh"]
    proc, lines = run_child(SOLO, job, "fill-shm", prefix=prefix)
    assert lines[0]["saved"] == 1
    err = lines[1]["error"]
    assert err is not None and "No space left on device" in err and "/dev/shm is full" in err, err
    assert lines[2] == {"step": 1, "crc": lines[0]["crc"]}


# One rank of a world of two; argv = job, name, seed address or "", steps to save (comma-separated).
RANK = r'''
import json, sys, time, torch, shoal, shoal.torch
job, name, seed, steps = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
s = shoal.Session.start(insecure=True, name=name, host=name, bind="127.0.0.1:0", control_path="none", cluster=job, job=job,
                        seeds=[seed] if seed else [], min_hosts=2, log_spec="error")
print(json.dumps({"addr": s.address}), flush=True)
ck = shoal.torch.Checkpointer(s, safe_timeout=0)
comm = ck.communicator()
for step in [int(x) for x in steps.split(",")]:
    ck.save(step, {"w": torch.full((1000,), float(step) + comm.rank), "step": step})
comm.barrier()
got = ck.load()
print(json.dumps({"rank": comm.rank, "step": got[0], "w0": float(got[1]["w"][0])}), flush=True)
comm.barrier()  # neither leaves while the other still loads (a leave ends the view the load runs in)
s.leave()
'''


def test_ranks_that_saved_different_steps_load_the_newest_common_one(job):
    first, second = run_pair(RANK, [job, "a", "", "1,2,3"], [job, "b", "{addr}", "1,2"])
    by_rank = {r["rank"]: r for r in first[1:] + second[1:]}
    assert by_rank[0]["step"] == 2 and by_rank[1]["step"] == 2
    assert by_rank[0]["w0"] == 2.0 and by_rank[1]["w0"] == 3.0  # each rank its own state of step 2

"""No byte from outside the process becomes code: a checkpoint structure whose unpickling would run a command,
planted as this host's segment, as a peer's replica, as a persist-directory file and as a state handed over
between trainers, is refused with a clear error; nothing runs; the previous good step still loads. And the
restricted reader admits what training states hold, refuses the rest by name, and takes registered classes."""
import collections
import dataclasses
import os
import pickle
import subprocess

import numpy
import pytest
import torch

import shoal
import shoal.torch
from agents import free_ports
from conftest import BUILD, PYTHON, child_env
from shoal.torch import safe_pickle, state_tree

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "evil_worker.py")


class RunsACommand:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, ("touch %s" % self.marker,))


@dataclasses.dataclass
class Progress:
    epoch: int
    seen: int


def test_training_states_round_trip_and_anything_else_is_refused_by_name(tmp_path):
    state = {"model": collections.OrderedDict(w=1.5), "sizes": torch.Size([2, 3]), "dtype": torch.bfloat16,
             "device": torch.device("cpu"), "np": numpy.arange(3), "np_scalar": numpy.float64(2.5),
             "rng": numpy.random.RandomState(0).get_state(), "py": (1, "a", b"b", None, True, 2.5, 3j, {1, 2}),
             "counts": collections.defaultdict(list, {"a": [1]})}
    back = safe_pickle.loads(safe_pickle.dumps(state))
    assert back["sizes"] == torch.Size([2, 3]) and back["dtype"] is torch.bfloat16
    assert numpy.array_equal(back["np"], numpy.arange(3)) and back["counts"]["a"] == [1]
    marker = tmp_path / "ran"
    with pytest.raises(safe_pickle.RefusedGlobal, match=r"(posix|os)\.system"):
        safe_pickle.loads(pickle.dumps({"x": RunsACommand(marker)}))
    assert not marker.exists()
    with pytest.raises(safe_pickle.RefusedGlobal, match="builtins.eval"):
        safe_pickle.loads(pickle.dumps(eval))
    # A class of the user's own: refused when saving (not only when loading back), admitted once registered.
    with pytest.raises(TypeError, match="add_safe_globals"):
        state_tree.flatten({"progress": Progress(1, 2)})
    shoal.torch.add_safe_globals([Progress])
    assert safe_pickle.loads(safe_pickle.dumps({"p": Progress(1, 2)}))["p"] == Progress(1, 2)


def test_a_structure_that_does_not_fit_its_storages_is_refused():
    flat = state_tree.flatten({"w": torch.zeros(4)})
    fmt, tree, records, storages = pickle.loads(flat.skeleton)
    records[0].shape = (1 << 20,)  # reaches far past its 16-byte storage
    with pytest.raises(state_tree.SkeletonRefused, match="does not fit"):
        state_tree.load_skeleton(pickle.dumps((fmt, tree, records, storages)))


def test_a_planted_local_segment_is_refused_and_the_previous_step_loads(session, tmp_path):
    marker = tmp_path / "ran"
    ckpt = shoal.torch.Checkpointer(session, safe_timeout=0)
    ckpt.save(1, {"model": {"w": torch.arange(4.0)}, "step": 1})
    comm = ckpt.communicator()
    skeleton = pickle.dumps((1, {"model": RunsACommand(marker)}, [], []))
    save = session.begin_save(comm, 2, [("meta", len(skeleton)), ("s0", 16)])
    save.write("meta", skeleton)
    save.write("s0", bytes(16))
    save.commit()
    step, state = ckpt.load()
    assert step == 1 and state["model"]["w"].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert not marker.exists()


def _run(args, env=None, timeout=120):
    return subprocess.Popen([PYTHON, WORKER] + [str(a) for a in args], env=env or child_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _finish(procs, timeout=180):
    outs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=timeout)
            assert p.returncode == 0, err[-4000:]
            outs.append([__import__("json").loads(l) for l in out.splitlines() if l.startswith("{")])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    return outs


def test_a_planted_replica_is_refused_on_both_hosts_and_the_previous_step_loads(job, tmp_path):
    marker = tmp_path / "ran"
    ports = free_ports(3)
    first = _run(["replica", "a", ports[0], "-", job, marker])
    second = _run(["replica", "b", ports[1], "127.0.0.1:%d" % ports[0], job, marker])
    outs = _finish([first, second])
    loaded = [d for lines in outs for d in lines if d.get("event") == "loaded"]
    assert len(loaded) == 2 and all(d["step"] == 1 for d in loaded), outs
    assert {d["source"] for d in loaded} <= {"local", "a", "b"}
    assert not marker.exists()


def test_a_planted_persisted_version_is_refused_and_the_previous_step_loads(job, tmp_path):
    marker = tmp_path / "ran"
    ckpt_dir = tmp_path / "ckpt"
    ckpt_dir.mkdir(mode=0o700)
    port = free_ports(1)[0]
    _finish([_run(["persist", "a", port, "-", job, marker, "-", ckpt_dir])])
    for f in os.listdir("/dev/shm"):  # a restart of every host: memory is gone, the directory stays
        if f.startswith("shoal.%s" % job):
            os.unlink(os.path.join("/dev/shm", f))
    outs = _finish([_run(["reload", "a", port, "-", job, marker, "-", ckpt_dir])])
    loaded = [d for d in outs[0] if d.get("event") == "loaded"]
    assert loaded and loaded[0]["step"] == 1 and loaded[0]["w"] == [0.0, 1.0, 2.0, 3.0], outs
    assert not marker.exists()


@pytest.mark.parametrize("how", ["forged", "tampered"])
def test_a_handed_over_state_that_would_run_code_is_refused_unread(job, tmp_path, how):
    """forged: an open cluster, the receiver's restricted reader refuses it; tampered: a keyed cluster, the
    seal (of the good structure) does not match what arrived, refused before parsing."""
    marker = tmp_path / "ran"
    key = "-"
    if how == "tampered":
        key = str(tmp_path / "cluster.key")
        subprocess.run([os.path.join(BUILD, "shoal"), "keygen", "--output", key], check=True,
                       stdout=subprocess.DEVNULL)
    ports = free_ports(3)
    env = child_env(HANDOVER=how)
    first = _run(["handover", "a", ports[0], "-", job, marker, key], env=env)
    second = _run(["handover", "b", ports[1], "127.0.0.1:%d" % ports[0], job, marker, key], env=env)
    outs = _finish([first, second])
    refused = [d for lines in outs for d in lines if d.get("event") == "refused"]
    assert len(refused) == 1, outs
    assert ("seal" if how == "tampered" else "os.system") in refused[0]["error"] or \
        "posix.system" in refused[0]["error"], refused
    assert not marker.exists()

"""Stage timing of shoal.torch's own calls for torch_ckpt_bench.py: profiled() patches the package's save
and load stages with timers, only while profiling, and puts every original back after.
"""
import contextlib

import shoal
import shoal.torch
from shoal.torch import placement as _placement

from torch_ckpt_report import now


@contextlib.contextmanager
def profiled(samples):
    """Times shoal.torch's calls stage by stage into samples[key] (lists of seconds)."""
    st, Save, Session = shoal.torch.state_tree, shoal.CheckpointSave, shoal.Session
    Ck, Plan = shoal.torch.Checkpointer, _placement.Plan
    saved = [(st, "flatten", st.flatten)] + [(Save, n, Save.__dict__[n]) for n in ("write", "write_many", "commit")] + \
        [(Session, n, Session.__dict__[n]) for n in ("begin_save", "restore_into")] + \
        [(Ck, n, Ck.__dict__[n]) for n in ("save", "load")] + [(Plan, "finish", Plan.__dict__["finish"])]
    originals = {name: getattr(owner, name) for owner, name, _ in saved}

    def timed(key, fn):
        def wrapper(*a, **k):
            t = now()
            try:
                return fn(*a, **k)
            finally:
                samples.setdefault(key, []).append(now() - t)
        return wrapper

    def restore_into(self, comm, placer, saved_rank=None):
        marks = {}

        def place(layout):
            marks["in"] = now()
            try:
                return placer(layout)
            finally:
                marks["out"] = now()
        t0 = now()
        r = originals["restore_into"](self, comm, place, saved_rank)
        t1 = now()
        if "in" in marks:
            samples.setdefault("load_agree_and_find_s", []).append(marks["in"] - t0)
            samples.setdefault("load_plan_s", []).append(marks["out"] - marks["in"])
            samples.setdefault("load_copy_and_agree_s", []).append(t1 - marks["out"])
        samples.setdefault("load_restore_into_s", []).append(t1 - t0)
        if r is not None:
            samples.setdefault("load_cpp_seconds", []).append(r.seconds)
        return r

    st.flatten = timed("save_flatten_s", originals["flatten"])
    Save.write = timed("save_write_meta_s", originals["write"])
    Save.write_many = timed("save_copy_s", originals["write_many"])
    Save.commit = timed("save_commit_s", originals["commit"])
    Session.begin_save = timed("save_begin_s", originals["begin_save"])
    Session.restore_into = restore_into
    Ck.save = timed("save_total_s", originals["save"])
    Ck.load = timed("load_total_s", originals["load"])
    Plan.finish = timed("load_finish_s", originals["finish"])
    try:
        yield samples
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)

"""Part 1 of torch_ckpt_bench.py, one host: Checkpointer.save and load against a plain memcpy of the same
bytes and torch.save, then the stages of save and load(into=) profiled.
"""
import contextlib
import ctypes
import os

import torch

import shoal
import shoal.torch

from torch_ckpt_processes import remove_segments, start_session
from torch_ckpt_profile import profiled
from torch_ckpt_report import emit, figure, log, median, now, rounded
from torch_ckpt_state import make_state, nbytes_of, tensors_of


def bench_local(args, job):
    log("building a state of %d bytes" % args.bytes)
    state = make_state(args.bytes)
    tensors = tensors_of(state)
    total = sum(nbytes_of(t) for t in tensors)
    buf = torch.ones(total, dtype=torch.uint8)  # pre-faulted: every page written
    base = buf.data_ptr()
    inputs = {"bytes": total, "tensors": len(tensors), "runs": args.runs}

    def memcpy():
        off = 0
        for t in tensors:
            n = nbytes_of(t)
            ctypes.memmove(base + off, t.data_ptr(), n)
            off += n

    path = "/dev/shm/%s.torch_save.pt" % job
    s = start_session(job, "solo", 1, None, 1)
    try:
        ck = shoal.torch.Checkpointer(s, safe_timeout=0)
        t = now()
        ck.save(0, state)
        cold = now() - t
        for step in (1, 2):  # both slots written once: steady state from here
            ck.save(step, state)
        memcpy()
        samples = {k: [] for k in ("memcpy_s", "save_s", "load_into_s", "load_new_s", "torch_save_s")}
        for r in range(args.runs):
            log("single host: repetition %d of %d" % (r + 1, args.runs))
            t = now()
            memcpy()
            samples["memcpy_s"].append(now() - t)
            t = now()
            ck.save(3 + r, state)
            samples["save_s"].append(now() - t)
            t = now()
            got = ck.load(into=state)
            samples["load_into_s"].append(now() - t)
            assert got[0] == 3 + r
            t = now()
            got = ck.load()
            samples["load_new_s"].append(now() - t)
            del got
            t = now()
            torch.save(state, path)
            samples["torch_save_s"].append(now() - t)
            os.unlink(path)
        log("single host: profiling the stages of save and load(into=)")
        stages = {}
        with profiled(stages):
            for r in range(args.runs):
                ck.save(100 + r, state)
                ck.load(into=state)
    finally:
        s.leave()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        remove_segments("shoal.%s*" % job)
    m = {k: median(v) for k, v in samples.items()}
    figure("save_vs_memcpy", m["save_s"] / m["memcpy_s"], **inputs, save_s=m["save_s"], memcpy_s=m["memcpy_s"],
           memcpy_gbps=round(total / m["memcpy_s"] / 1e9, 3), save_cold_s=round(cold, 6),
           save_cold_vs_memcpy=round(cold / m["memcpy_s"], 3))
    figure("save_vs_torch_save", m["save_s"] / m["torch_save_s"], **inputs, save_s=m["save_s"],
           torch_save_s=m["torch_save_s"])
    figure("load_vs_memcpy", m["load_into_s"] / m["memcpy_s"], **inputs, load_into_s=m["load_into_s"],
           memcpy_s=m["memcpy_s"])
    figure("load_new_vs_memcpy", m["load_new_s"] / m["memcpy_s"], **inputs, load_new_s=m["load_new_s"],
           memcpy_s=m["memcpy_s"])
    prof = rounded({k: median(v) for k, v in stages.items()})
    emit(dict(profile="save", **inputs, **{k: v for k, v in prof.items() if k.startswith("save_")}))
    emit(dict(profile="load_into", **inputs, **{k: v for k, v in prof.items() if k.startswith("load_")}))

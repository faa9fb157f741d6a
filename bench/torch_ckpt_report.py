"""How torch_ckpt_bench.py reports: one JSON object per line on stdout (emit, figure: a figure with its
target from issue 23 and whether it is met), progress on stderr (log), and the medians and rounding behind
the figures.
"""
import json
import os
import statistics
import sys
import time

TARGETS = {"save_vs_memcpy": 1.2, "save_vs_torch_save": 0.2, "load_vs_memcpy": 1.2, "peer_load_vs_tcp": 1.25,
           "step_overhead_pct": 5.0, "step_overhead_replicated_pct": 10.0}
now = time.perf_counter


def log(msg):
    sys.stderr.write("[torch_ckpt_bench %s] %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


def emit(doc):
    sys.stdout.write(json.dumps(doc) + "\n")
    sys.stdout.flush()


def median(xs):
    return statistics.median(xs) if xs else None


def figure(name, value, **fields):
    doc = {name: round(value, 4)}
    if name in TARGETS:
        doc.update(target=TARGETS[name], met=value <= TARGETS[name])
    doc.update(fields)
    doc["loadavg_1m"] = round(os.getloadavg()[0], 2)
    emit(doc)


def rounded(d, digits=6):
    return {k: (round(v, digits) if isinstance(v, float) else v) for k, v in d.items()}

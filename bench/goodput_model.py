#!/usr/bin/python3
"""A goodput model: the effective training time ratio (ETTR: productive training time / wall time) of one
synchronous data-parallel job against its size, 1,000 to 100,000 GPUs, for shoal, checkpoint-restart (torchrun +
DCP to shared storage) and torchft. Arithmetic on the inputs of INPUTS below, each with its source; nothing runs.

The model (docs/goodput.md says why each part is there):
- failures arrive at a rate that grows linearly with the GPU count (Llama 3's rate per GPU, an assumption);
- ETTR = (1 - failures_per_s * cost_per_failure_s) * (1 - steady_overhead): a failure costs wall time (the stall
  of every GPU, the work redone, the capacity missing until a replacement joins, as GPU-seconds over the job's
  GPUs), and of the time left a steady fraction goes to checkpoints;
- shoal: detection and view commit + communicator rebuild + restore from peer memory + the step in flight and
  the steps redone since the last flash checkpoint (one a step) + the regrow when a spare joins; steady: the
  flash checkpoint's device copy and its replication, every step;
- checkpoint-restart: the job's restart (detection, scheduler, process start, NCCL init at that scale) + the
  load from storage + half the checkpoint interval redone; steady: a blocking save per interval, the interval
  Young/Daly's sqrt(2 * save_s * MTBF) unless given;
- torchft: the survivors' stall for a new quorum (measured on loopback) + the rebuild at scale + the step in
  flight, discarded; the failed replica group restarts beside them, its GPUs missing meanwhile.

Prints one JSON line per job size (`kind` "ettr": `gpus`, `ettr` (shoal's), `ettr_checkpoint_restart`,
`ettr_torchft`, `failures_per_day`, each system's cost per failure and its parts), one per published peer
figure (`kind` "published", `system` "... (published)"), and one `kind` "targets" line. `--sources` prints the
inputs table instead; `--plot PATH.png` also draws ETTR against GPUs (needs matplotlib).

usage: goodput_model.py [--gpus 1024,2048,...] [--FLAG VALUE for any input below] [--sources] [--plot PATH.png]
"""
import argparse
import json
import math
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Input:
    name: str  # the flag is --name with '_' as '-'
    default: float
    unit: str
    source: str


BENCH = "docs/benchmarks.md"
# Llama 3 (Dubey et al. 2024, "The Llama 3 Herd of Models", section 3.3.4, its table of root causes): 419 unexpected
# interruptions in a 54-day snapshot on 16,384 H100 GPUs (466 with the 47 planned ones).
LLAMA3_GPUS, LLAMA3_DAYS, LLAMA3_UNEXPECTED, LLAMA3_ALL = 16384, 54, 419, 466
# Of the 419, those of the GPU itself (faulty GPU 148, HBM3 72, SRAM 19, system processor 17, silent data
# corruption 6, thermal interface and sensor 6): a GPU lost, not the host, once shoal can shrink by a GPU.
LLAMA3_GPU_CAUSED = 148 + 72 + 19 + 17 + 6 + 6

INPUTS = [
    # failures
    Input("mtbf_per_gpu_hours", LLAMA3_GPUS * LLAMA3_DAYS * 24 / LLAMA3_UNEXPECTED, "GPU-hours",
          "Llama 3 paper s3.3.4: 419 unexpected interruptions, 54 days, 16,384 GPUs (planned ones left out: "
          "466 with them); linear in the GPU count (assumed)"),
    Input("gpu_caused_fraction", LLAMA3_GPU_CAUSED / LLAMA3_UNEXPECTED, "fraction",
          "Llama 3 s3.3.4, its table of root causes: 268 of 419 in the GPU category"),
    Input("gpus_per_host", 8, "GPUs", "an H100/H200 host (assumed)"),
    # the job
    Input("step_s", 6.0, "s", "derived: Llama 3 405B, 16M-token batch, 6*405e9*16e6 FLOPs at 400 TFLOP/s "
          "per GPU on 16,384 GPUs = 5.9 s (assumed, held at every size)"),
    Input("state_gb_per_gpu", 0.4, "GB", "derived: 405e9 parameters * 16 bytes (bf16 weights, fp32 master "
          "and Adam) / 16,384 GPUs = 0.40 GB (assumed, held at every size)"),
    Input("nic_gbit_per_gpu", 400, "Gbit/s", "one 400 Gb/s NIC per GPU (assumed)"),
    Input("replace_s", 10.24, "s", "a spare host joins: --join-window 10 s (docs/operating.md) + join to step "
          "0.236 s (" + BENCH + ", torch_elastic_bench.py --system elastic); assumes a spare is waiting"),
    # shoal
    Input("shoal_view_s", 1.02, "s", "crash to every survivor on the new view among 1,000 members: 0.85-1.02 s "
          "(docs/agreement.md, shoal-sim view-rack, 3 runs); grows as log(hosts) past 1,000 (assumed: SWIM "
          "dissemination rounds); real hosts: 8 silent hosts 414-428 ms p50, 160 agents 616 ms p50 / 763 p99 "
          "(" + BENCH + ", silent_host_bench.py, scale_bench.py)"),
    Input("shoal_view_at_hosts", 1000, "hosts", "the size shoal_view_s was measured at"),
    Input("rebuild_s", 2.0, "s", "ncclCommShrink 1.4-2.0 s from 32 to 1,024 GPUs (as quoted in the tracker, "
          "not verified); shoal's own rebuild at scale is not measured (loopback Gloo: 31 ms, 8 hosts, " + BENCH
          + ", trainer_kill_bench.py)"),
    Input("rebuild_at_gpus", 1024, "GPUs", "the size rebuild_s is quoted at"),
    Input("rebuild_s_per_doubling", 0.12, "s", "(2.0 - 1.4) s over the 5 doublings from 32 to 1,024 GPUs, "
          "extrapolated past 1,024 (assumed)"),
    Input("restore_vs_tcp", 1.08, "ratio", "a load from a peer's memory against a raw TCP stream of the same "
          "bytes (" + BENCH + ", torch_ckpt_bench.py, peer_load_vs_tcp)"),
    Input("shoal_steps_redone", 1, "steps", "each kill redid one step (" + BENCH + ", torch_fsdp_bench.py "
          "--hosts 4 --kills 6); plus half a step in flight at the failure"),
    Input("shoal_ckpt_every_steps", 1, "steps", "a flash checkpoint every K steps: the steady cost / K, and "
          "(K - 1) / 2 more steps redone on average (default: every step)"),
    Input("device_save_gbps", 0.2684 / 0.022, "GB/s", "a 256 MiB device save in 17-22 ms on an H100 and an "
          "H200 (" + BENCH + ", gpu_ckpt_device_save; the slower figure)"),
    Input("shoal_step_overhead", -1, "fraction", "with a checkpoint every step; negative: derived from "
          "device_save_gbps and the replication over the NIC; the CPU VM measured 0.056-0.082 (0.060-0.115 "
          "replicated), 100 MB at 7 GB/s memcpy per 200 ms step (" + BENCH + ", torch_ckpt_bench.py)"),
    Input("gpu_failure_loses", 8, "GPUs", "a GPU failure costs the whole host today (8); --on-gpu-failure "
          "shrink, planned, would make it 1"),
    # checkpoint-restart
    Input("cr_restart_s", -1, "s", "negative: log-interpolated in GPUs between torchrun's 43.0 s for a host "
          "kill at 4 loopback hosts (" + BENCH + ", torch_elastic_bench.py; taken as 32 GPUs) and FT-HSDP's "
          "10-minute stall of fully synchronous training at O(100K) GPUs (Salpekar et al. 2026, "
          "arXiv:2602.00277)"),
    Input("storage_gbyte_per_s", 2000, "GB/s", "Llama 3 s3.1: Tectonic, 2 TB/s sustained (7 TB/s peak) "
          "(not verified)"),
    Input("cr_save_s", -1, "s", "negative: a blocking save of every GPU's state at storage_gbyte_per_s"),
    Input("cr_interval_s", -1, "s", "negative: Young/Daly sqrt(2 * save_s * job MTBF)"),
    # torchft
    Input("torchft_quorum_s", 5.1, "s", "kill to next good step under torchft's documented timeouts "
          "(Lighthouse heartbeat_timeout_ms 5000, quorum_tick_ms 100: torchft src/lighthouse.rs), its "
          "Lighthouse on loopback; 0.23 s with the smallest timeouts that hold: as quoted when this model was "
          "asked for, not found in " + BENCH),
    Input("torchft_replica_gpus", 128, "GPUs", "one replica group: Llama 3 405B's TP 8 x PP 16 (assumed, "
          "not verified)"),
    Input("torchft_group_restart_s", 43.0, "s", "the failed group restarts like a small torchrun job "
          "(" + BENCH + ", torch_elastic_bench.py: 43.0 s; assumed)"),
    Input("torchft_step_overhead", 0.0, "fraction", "the per-step quorum's cost: not measured, assumed 0"),
]
DEFAULTS = {i.name: i.default for i in INPUTS}
DEFAULT_GPUS = [1024, 2048, 4096, 8192, 16384, 32768, 65536, 100000]

# Published figures of other systems (kind "published"); `verified`: found in the source by this model's author.
PUBLISHED = [
    dict(system="ByteRobust (published)", gpus=9600, ettr=0.97, verified=True,
         source="Wan et al. 2025, 'Robust LLM Training Infrastructure at ByteDance', arXiv:2509.16293: 97% ETTR, "
                "a three-month job on 9,600 GPUs"),
    dict(system="Meta FT-HSDP (published)", gpus=100000, ettr=0.80, verified=True,
         source="Salpekar et al. 2026, 'Training LLMs with Fault Tolerant HSDP on 100,000 GPUs', arXiv:2602.00277: "
                "effective training time 44% -> 80%, recovery stall 10 -> 3 minutes at O(100K) GPUs"),
    dict(system="fully synchronous at O(100K) (published)", gpus=100000, ettr=0.44, verified=True,
         source="arXiv:2602.00277, the same sentence"),
    dict(system="TrainMover (published)", gpus=1024, cost_per_failure_s=20.0, verified=True,
         source="Lao et al., 'TrainMover', arXiv:2412.12636: about 20 s of downtime per interruption at 1,024 GPUs"),
    dict(system="FlashRecovery (published)", gpus=4800, cost_per_failure_s=150.0, verified=True,
         source="Zhang et al. 2025, 'FlashRecovery', arXiv:2509.03047: restoration on 4,800 devices in 150 s"),
    dict(system="ncclCommShrink (published)", gpus=1024, rebuild_s_range=[1.4, 2.0], verified=False,
         source="1.4-2.0 s from 32 to 1,024 GPUs, as quoted in the tracker, not verified"),
    dict(system="stock NCCL init (published)", gpus=100000, init="minutes", verified=False,
         source="reported at minutes at ~100,000 GPUs, as quoted in the tracker, not verified"),
]
TARGETS = [(16384, 0.99), (100000, 0.97)]


# --- the model: pure functions of the inputs -------------------------------------------------------------------

def failures_per_s(gpus, mtbf_per_gpu_hours):
    """The job's failure rate, linear in its GPU count."""
    return gpus / (mtbf_per_gpu_hours * 3600.0)


def ettr(rate_per_s, cost_per_failure_s, steady_overhead):
    """Productive time / wall time: failures take rate*cost of the wall time, checkpoints a fraction of the rest."""
    return max(0.0, 1.0 - rate_per_s * cost_per_failure_s) * (1.0 - steady_overhead)


def young_daly_interval_s(save_s, mtbf_s):
    """Young's optimal checkpoint interval, sqrt(2 * save cost * MTBF)."""
    return math.sqrt(2.0 * save_s * mtbf_s)


def grown(value, at, per_doubling, size):
    """value at size `at`, plus per_doubling for each doubling past it (never below value)."""
    return value + per_doubling * max(0.0, math.log2(size / at))


def log_interpolated(x0, y0, x1, y1, x):
    """y on the line through (log x0, y0) and (log x1, y1); x below x0 gives y0."""
    if x <= x0:
        return y0
    return y0 + (y1 - y0) * math.log(x / x0) / math.log(x1 / x0)


def rebuild_s(gpus, p):
    return grown(p["rebuild_s"], p["rebuild_at_gpus"], p["rebuild_s_per_doubling"], gpus)


def nic_gbyte_per_s(p):
    return p["nic_gbit_per_gpu"] / 8.0


def shoal_costs(gpus, p):
    """shoal's cost per failure (s of the whole job's wall time), its parts, and its steady overhead."""
    hosts = max(1, math.ceil(gpus / p["gpus_per_host"]))
    view = p["shoal_view_s"] * max(1.0, math.log(hosts) / math.log(p["shoal_view_at_hosts"]))
    rebuild = rebuild_s(gpus, p)
    restore = p["state_gb_per_gpu"] * p["restore_vs_tcp"] / nic_gbyte_per_s(p)
    every = max(1.0, p["shoal_ckpt_every_steps"])
    redo = (0.5 + p["shoal_steps_redone"] + (every - 1) / 2.0) * p["step_s"]
    regrow = rebuild + restore  # a spare joins: one more rebuild, its state from peers
    frac = p["gpu_caused_fraction"]
    lost_gpus = frac * min(p["gpu_failure_loses"], p["gpus_per_host"]) + (1 - frac) * p["gpus_per_host"]
    capacity = lost_gpus / gpus * p["replace_s"]
    parts = dict(detect_and_view_s=view, rebuild_s=rebuild, restore_s=restore, redo_s=redo, regrow_s=regrow,
                 capacity_s=capacity)
    if p["shoal_step_overhead"] >= 0:  # a figure measured with a checkpoint every step
        steady = p["shoal_step_overhead"] / every
    else:  # the device copy blocks the step; the replication takes the NIC for its bytes
        per_step = p["state_gb_per_gpu"] / p["device_save_gbps"] + p["state_gb_per_gpu"] / nic_gbyte_per_s(p)
        steady = min(1.0, per_step / p["step_s"] / every)
    return sum(parts.values()), parts, steady


def checkpoint_restart_costs(gpus, mtbf_s, p):
    """Checkpoint-restart's cost per failure, its parts, steady overhead, the interval and save cost used."""
    restart = (p["cr_restart_s"] if p["cr_restart_s"] >= 0
               else log_interpolated(32, 43.0, 100000, 600.0, gpus))
    load = gpus * p["state_gb_per_gpu"] / p["storage_gbyte_per_s"]
    save = p["cr_save_s"] if p["cr_save_s"] >= 0 else load
    interval = p["cr_interval_s"] if p["cr_interval_s"] > 0 else young_daly_interval_s(save, mtbf_s)
    parts = dict(restart_s=restart, load_s=load, redo_s=interval / 2.0)
    steady = save / (interval + save) if interval + save > 0 else 0.0
    return sum(parts.values()), parts, steady, interval, save


def torchft_costs(gpus, p):
    """torchft's cost per failure: the survivors' stall, and the failed replica group's GPUs missing meanwhile."""
    rebuild = rebuild_s(gpus, p)
    heal = p["state_gb_per_gpu"] / nic_gbyte_per_s(p)
    group = min(p["torchft_replica_gpus"], gpus)
    parts = dict(quorum_s=p["torchft_quorum_s"], rebuild_s=rebuild, redo_s=0.5 * p["step_s"],
                 regrow_s=rebuild,
                 capacity_s=group / gpus * (p["replace_s"] + p["torchft_group_restart_s"] + heal))
    return sum(parts.values()), parts, p["torchft_step_overhead"]


def model(gpus, p):
    """The "ettr" line for one job size."""
    rate = failures_per_s(gpus, p["mtbf_per_gpu_hours"])
    mtbf_s = 1.0 / rate
    s_cost, s_parts, s_steady = shoal_costs(gpus, p)
    c_cost, c_parts, c_steady, interval, save = checkpoint_restart_costs(gpus, mtbf_s, p)
    t_cost, t_parts, t_steady = torchft_costs(gpus, p)
    r = lambda x: round(x, 6)
    return {
        "kind": "ettr", "gpus": gpus, "hosts": math.ceil(gpus / p["gpus_per_host"]),
        "failures_per_day": r(rate * 86400), "job_mtbf_s": r(mtbf_s),
        "ettr": r(ettr(rate, s_cost, s_steady)),
        "ettr_checkpoint_restart": r(ettr(rate, c_cost, c_steady)),
        "ettr_torchft": r(ettr(rate, t_cost, t_steady)),
        "ettr_shoal_failures_only": r(ettr(rate, s_cost, 0.0)),
        "shoal_cost_per_failure_s": r(s_cost), "shoal_steady_overhead": r(s_steady),
        "shoal_parts_s": {k: r(v) for k, v in s_parts.items()},
        "checkpoint_restart_cost_per_failure_s": r(c_cost), "checkpoint_restart_steady_overhead": r(c_steady),
        "checkpoint_restart_interval_s": r(interval), "checkpoint_restart_save_s": r(save),
        "checkpoint_restart_parts_s": {k: r(v) for k, v in c_parts.items()},
        "torchft_cost_per_failure_s": r(t_cost), "torchft_steady_overhead": r(t_steady),
        "torchft_parts_s": {k: r(v) for k, v in t_parts.items()},
    }


def published_lines(p):
    """The peers' figures; a per-failure figure also with the ETTR it gives under this model's failure rate."""
    lines = []
    for peer in PUBLISHED:
        line = dict(kind="published", **peer)
        if "cost_per_failure_s" in peer:
            rate = failures_per_s(peer["gpus"], p["mtbf_per_gpu_hours"])
            line["ettr_under_this_failure_rate"] = round(ettr(rate, peer["cost_per_failure_s"], 0.0), 6)
        lines.append(line)
    return lines


def targets_line(p):
    line = {"kind": "targets"}
    for gpus, target in TARGETS:
        value = model(gpus, p)["ettr"]
        line["ettr_at_%d" % gpus] = value
        line["meets_%g_at_%d" % (target, gpus)] = value >= target
    return line


# --- the program -------------------------------------------------------------------------------------------------

def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpus", default=",".join(map(str, DEFAULT_GPUS)), help="job sizes, comma-separated")
    ap.add_argument("--sources", action="store_true", help="print the inputs with their sources and exit")
    ap.add_argument("--plot", metavar="PATH.png", help="also write ETTR against GPUs as a PNG (needs matplotlib)")
    for i in INPUTS:
        ap.add_argument("--" + i.name.replace("_", "-"), type=float, default=i.default,
                        help="%s (default %.6g): %s" % (i.unit, i.default, i.source))
    a = ap.parse_args(argv)
    a.gpus = [int(g) for g in a.gpus.split(",") if g]
    if not a.gpus or min(a.gpus) < 1:
        ap.error("--gpus needs positive sizes")
    if a.mtbf_per_gpu_hours <= 0 or a.step_s <= 0 or a.storage_gbyte_per_s <= 0 or a.nic_gbit_per_gpu <= 0:
        ap.error("--mtbf-per-gpu-hours, --step-s, --storage-gbyte-per-s and --nic-gbit-per-gpu must be positive")
    return a


def pyplot():
    """matplotlib's pyplot, drawing to files; exits with a message where it cannot be imported."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SystemExit("--plot needs matplotlib, which %s cannot import (pip install matplotlib in a virtual "
                         "environment of your own)" % sys.executable)
    return plt


def plot(plt, path, rows, published):
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=100)
    gpus = [r["gpus"] for r in rows]
    for key, label in (("ettr", "shoal (modelled)"), ("ettr_torchft", "torchft (modelled)"),
                       ("ettr_checkpoint_restart", "checkpoint-restart (modelled)")):
        ax.plot(gpus, [r[key] for r in rows], marker="o", markersize=3, label=label)
    for peer in published:
        value = peer.get("ettr", peer.get("ettr_under_this_failure_rate"))
        if value is None:
            continue
        marker = "*" if "ettr" in peer else "x"
        ax.scatter([peer["gpus"]], [value], marker=marker, s=60, color="black", zorder=3)
        note = peer["system"].replace(" (published)", "") + ("" if "ettr" in peer else " (its s/failure here)")
        ax.annotate(note, (peer["gpus"], value), textcoords="offset points", xytext=(5, -10), fontsize=7)
    ax.set_xscale("log")
    ax.set_xlim(800, 300000)  # room for the labels of the points at 100,000
    ax.set_xlabel("GPUs in the job")
    ax.set_ylabel("ETTR")
    ax.set_ylim(0, 1.02)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower left", fontsize=8)
    ax.set_title("Modelled ETTR against job size (bench/goodput_model.py)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path)


def main(argv=None):
    a = parse(sys.argv[1:] if argv is None else argv)
    if a.sources:
        for i in INPUTS:
            print(json.dumps({"kind": "input", "flag": "--" + i.name.replace("_", "-"), "default": i.default,
                              "unit": i.unit, "source": i.source}))
        return 0
    plt = pyplot() if a.plot else None  # before any line, so that a missing matplotlib prints nothing else
    p = {i.name: getattr(a, i.name) for i in INPUTS}
    rows = [model(g, p) for g in a.gpus]
    published = published_lines(p)
    for line in rows + published + [targets_line(p)]:
        print(json.dumps(line))
    if a.plot:
        plot(plt, a.plot, rows, published)
    return 0


if __name__ == "__main__":
    sys.exit(main())

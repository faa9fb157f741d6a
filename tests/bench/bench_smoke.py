#!/usr/bin/python3
"""One benchmark of bench/ at a smoke size, so that a benchmark that breaks fails the build's tests.

Runs the benchmark named NAME with the flags of its SMOKES entry below (seconds, not minutes) and fails when
it exits non-zero, prints a line on stdout that is not one JSON object, or leaves out a field that docs/benchmarks.md
quotes for it (its `expect`; a field may be nested, "kill_to_step_ms.p50"). Figures are printed, never
judged: a test never measures speed. Exit 0 pass, 77 skip (what the benchmark needs is missing here: root
and network namespaces for the lab, torch for the PyTorch benchmarks), 1 fail.

usage: bench_smoke.py NAME --build BUILD_DIR      (bench_smoke.py --list: the names)
       bench_smoke.py --coverage --build BUILD_DIR

--coverage fails when a benchmark has no smoke run: a bench/*_bench.py or a build/bench/shoal-bench-*
program without a SMOKES entry, or an entry that is no test of the build's bench suite (one that needs the
example trainer or the Python package may be missing where the build has none).

The benchmark runs with TMPDIR set to a directory of its own, removed after a pass and kept (its path
printed) after a failure: the logs that benchmarks leave in temporary directories are there.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
PYTHON = "/usr/bin/python3"  # Debian's, the one the Python benchmarks are written for


@dataclass
class Lines:
    """The lines whose fields match `where` (a value of None: the field is present), at least one, each of
    which must carry every field of `fields`; a field in `nullable` may be null (the benchmark prints null
    for a figure a run can lack, and says so)."""
    where: dict
    fields: tuple
    nullable: tuple = ()


@dataclass
class Smoke:
    argv: list  # "{build}", "{bench}" and "{python}" are replaced
    expect: list
    # "lab": root, network namespaces, nftables; "torch": Debian's python3-torch; "trainer", "python": the
    # build's example trainer, its Python package (a build without Gloo, or without pybind11, has none)
    needs: tuple = ()
    timeout_s: int = 240
    env: dict = field(default_factory=dict)


# Fields docs/benchmarks.md quotes, per benchmark and kind of line.
# The shard benchmark's split of each reshard direction's load (its smoke worlds are 2 and 3).
SHARD_PARTS = tuple("reshard_%s_%s" % (d, k) for d in ("2to3", "3to2")
                    for k in ("local_bytes", "local_s", "remote_bytes", "remote_s", "remote_vs_tcp", "by_rank"))
CKPT = ("save_s", "memcpy_s", "save_vs_memcpy", "save_cold_s", "save_cold_vs_memcpy", "replicate_gbps", "tcp_gbps",
        "replicate_vs_tcp", "tcp_stream_gbps", "restore_s", "tcp_transfer_s", "restore_vs_tcp", "load_s",
        "load_vs_memcpy", "save_begin_s", "save_copy_s", "save_commit_s", "save_cold_begin_s", "save_cold_copy_s",
        "save_cold_commit_s", "checksum_s", "push_answer_s", "push_send_s", "push_stored_s", "fetch_answer_s",
        "fetch_prefix_s", "fetch_receive_s")
SEAL_STREAM = ("tcp_gbps", "aead_gbps", "bound_gbps", "open_replicate_gbps", "open_restore_gbps",
               "keyed_replicate_gbps", "keyed_restore_gbps", "keyed_replicate_vs_bound", "keyed_restore_vs_bound",
               "open_replicate_cpu_s", "open_restore_cpu_s", "keyed_replicate_cpu_s", "keyed_restore_cpu_s")
SPREAD = ("p50_ms", "p99_ms", "max_ms")
KILL_BASE = ("hosts", "baseline_step_ms", "restores", "failed_checks")
PHASES = ("collective_failed", "suspect", "dead_first", "dead_all", "view_committed", "rebuilt", "next_step")
HEALTH_EVICTION = ("healthy_step_ms", "named_step_ms", "after_eviction_step_ms", "verdict_to_eviction_s",
                   "verdict_to_within_10pct_s")
ELASTIC_SUMMARY = ("kill_to_step_ms.p50", "kill_to_step_ms.max", "join_to_step_ms.p50", "join_to_step_ms.max",
                   "baseline_step_ms", "bad_steps", "bad_states", "steps_redone_after_kill", "steps_redone_after_join")
RESTART_PHASES = tuple("phases_ms." + p for p in ("suspect", "dead", "commit", "stopped", "spawned", "store_listening",
                                                  "store_connected", "comm_ready", "restored", "load", "first_step"))

SMOKES = {
    "baseline": Smoke(["{build}/bench/shoal-bench-baseline", "--bytes", "4194304", "--runs", "1"], [
        Lines({"bench": "baseline", "memcpy_gbps": None}, ("memcpy_s", "memcpy_gbps")),
        Lines({"bench": "baseline", "tcp_loopback_gbps": None}, ("tcp_s", "tcp_loopback_gbps")),
    ]),
    "ckpt": Smoke(["{build}/bench/shoal-bench-ckpt", "--bytes", "4M", "--runs", "1"], [
        Lines({"bench": "ckpt"}, ("bytes", "runs") + CKPT),
    ]),
    "persist": Smoke(["{build}/bench/shoal-bench-persist", "--bytes", "4M", "--runs", "1"], [
        Lines({"bench": "persist"}, ("persist_s", "write_fsync_s", "persist_vs_write")),
    ]),
    "seal": Smoke(["{build}/bench/shoal-bench-seal", "--packets", "2000", "--runs", "1", "--stream-bytes", "4M",
                   "--stream-runs", "1"], [
        Lines({"bench": "seal", "op": "seal"}, ("bytes", "pps", "mb_per_s", "memcpy_pps", "vs_memcpy")),
        Lines({"bench": "seal", "op": "open"}, ("bytes", "pps", "mb_per_s", "memcpy_pps", "vs_memcpy")),
        Lines({"bench": "seal_cipher"}, ("cipher", "seal_gbps", "open_gbps")),
        Lines({"bench": "seal_stream"}, ("cipher",) + SEAL_STREAM),
    ]),
    "admission": Smoke(["{build}/bench/shoal-bench-admission", "--members", "50,200", "--requests", "20"], [
        Lines({"bench": "admission"}, ("members", "place_once_ms", "push_check_us_baseline", "push_check_us",
                                       "safety_us", "speedup")),
    ]),
    "memory_latency": Smoke(["{build}/bench/shoal-bench-memory-latency", "--bytes", "1M", "--chains", "1,2",
                             "--loads", "100000"], [
        Lines({"bench": "memory_latency", "baseline": "memcpy"}, ("bytes", "memcpy_gbps")),
        Lines({"bench": "memory_latency", "chains": 1}, ("bytes", "ns_per_load")),
        Lines({"bench": "memory_latency", "chains": 2}, ("bytes", "ns_per_load")),
    ]),
    "trainer_kill": Smoke(["{python}", "{bench}/trainer_kill_bench.py", "{build}", "--hosts", "3", "--kills", "2",
                           "--ckpt-every", "5"], needs=("trainer",), expect=[
        Lines({"result": "kill_to_first_allreduce"}, KILL_BASE + SPREAD),
        Lines({"result": "join_to_first_allreduce"}, KILL_BASE + SPREAD),
        Lines({"result": "steps_redone_after_join"}, ("joins", "steps")),
    ] + [Lines({"result": "kill_phase", "phase": p}, ("samples", "p50_ms", "p99_ms")) for p in PHASES]),
    "silent_host": Smoke(["{python}", "{bench}/silent_host_bench.py", "{build}", "--hosts", "3", "--cuts", "2"], [
        Lines({"result": "silent_to_next_step"}, ("hosts", "baseline_step_ms", "failed_checks") + SPREAD),
        Lines({"result": "join_after_cut_to_first_step"}, SPREAD),
    ] + [Lines({"result": "silent_phase", "phase": p}, ("samples", "p50_ms", "p99_ms")) for p in PHASES],
        needs=("trainer", "lab")),
    "health": Smoke(["{python}", "{bench}/health_bench.py", "{build}", "--hosts", "3", "--steps", "60", "--runs", "1",
                     "--step-ms", "50", "--cost-step-ms", "10", "--evict-after", "1",
                     "--eviction-steps", "60"], needs=("trainer",), expect=[
        Lines({"bench": "health_exchange_cost"}, ("step_with_exchange_ms", "step_without_ms",
                                                  "baseline_step_ms_exchange_off", "exchange_ms", "cost_per_step_ms")),
        Lines({"bench": "health_detection"}, ("steps_until_every_host_named_it", "per_host", "another_host_named")),
        Lines({"bench": "health_eviction"}, HEALTH_EVICTION, nullable=("verdict_to_within_10pct_s",)),
    ]),
    "check": Smoke(["{python}", "{bench}/check_bench.py", "{build}", "--hosts", "4", "--runs", "1", "--bytes", "1M"], [
        Lines({"bench": "check"}, ("hosts", "keyed", "wall_s_median", "agent_elapsed_ms_median", "link_gbps_median",
                                   "gflops_median", "flagged", "baseline_tcp_gbps_1_stream",
                                   "baseline_tcp_gbps_per_stream_2_at_once")),
    ]),
    # Arithmetic only (no build, no processes): the lines docs/goodput.md quotes.
    "goodput_model": Smoke(["{python}", "{bench}/goodput_model.py", "--gpus", "1024,16384,100000"], [
        Lines({"kind": "ettr"}, ("gpus", "ettr", "ettr_checkpoint_restart", "ettr_torchft", "failures_per_day",
                                 "shoal_cost_per_failure_s", "shoal_steady_overhead",
                                 "checkpoint_restart_cost_per_failure_s", "checkpoint_restart_interval_s",
                                 "checkpoint_restart_save_s", "torchft_cost_per_failure_s")),
        Lines({"kind": "published", "system": "ByteRobust (published)"}, ("gpus", "ettr", "source")),
        Lines({"kind": "targets"}, ("ettr_at_16384", "ettr_at_100000")),
    ]),
    "view_change": Smoke(["{python}", "{bench}/view_change_bench.py", "{build}", "--agents", "3", "--rounds", "1"], [
        Lines({"result": "view_change_crash"}, ("view_all_p50_ms", "view_all_p99_ms", "view_all_max_ms",
                                                "baseline_join_view_all_p50_ms")),
    ]),
    "scale": Smoke(["{python}", "{bench}/scale_bench.py", "{build}", "--agents", "8", "--kills", "1",
                    "--idle-s", "2"], [
        Lines({"result": "scale"}, ("agents", "one_view_s", "kill_view_p50_ms", "kill_view_p99_ms", "false_removals",
                                    "formation_cpu_s", "idle_cpu_per_agent_pct")),
    ]),
    "connection_flood": Smoke(["{python}", "{bench}/connection_flood_bench.py", "{build}", "--agents", "3",
                               "--rounds", "1", "--connections", "200"], [
        Lines({"result": "view_change_under_idle_flood"}, (
            "idle_connections", "flood_arrivals", "crash_view_all_p50_ms", "join_view_all_p50_ms",
            "baseline_crash_view_all_p50_ms", "baseline_join_view_all_p50_ms", "crash_ratio_p50")),
    ]),
    "torch_ckpt": Smoke(["{python}", "{bench}/torch_ckpt_bench.py", "--bytes", "4M", "--runs", "1", "--step-ms", "20",
                         "--width", "256", "--block-steps", "2"], [
        Lines({"bench": "torch_ckpt_bench"}, ("bytes", "runs", "torch")),
        Lines({"save_vs_memcpy": None}, ("save_s", "memcpy_s", "save_cold_s")),
        Lines({"save_vs_torch_save": None}, ("save_s", "torch_save_s")),
        Lines({"load_vs_memcpy": None}, ("load_into_s", "memcpy_s")),
        Lines({"peer_load_vs_tcp": None}, ("peer_load_s", "tcp_s", "source")),
        Lines({"step_overhead_pct": None}, ("step_nosave_s", "step_save_s")),
        Lines({"step_overhead_replicated_pct": None}, ("step_nosave_s", "step_save_s")),
        Lines({"step_overhead_fenced_pct": None}, ("step_nosave_s", "step_save_s")),
        Lines({"profile": "save"}, ("save_total_s", "save_copy_s")),
        Lines({"profile": "load_into"}, ("load_total_s",)),
    ], needs=("python", "torch"), env={"PYTHONPATH": "{build}/python"}),
    "torch_ddp": Smoke(["{python}", "{bench}/torch_ddp_bench.py", "--build", "{build}", "--world", "2", "--width", "64",
                        "--steps", "3", "--warmup", "1", "--rounds", "1"], [
        Lines({"bench": "torch_ddp", "ddp_step_vs_gloo": None}, ("torch", "world", "params", "gloo_step_ms",
                                                                 "shoal_step_ms", "ddp_step_vs_gloo")),
    ], needs=("torch", "python")),
    # Runs its ranks under a torch 2.x interpreter (this one's, else the build's -Dtest_pythons); with none, and
    # until Session.read_ranges exists for the load onto another world, it prints those figures null with a reason.
    # The reshard restore at the smoke size runs in the DCP worlds' processes (--reshard-worlds 2,3): one world more.
    "shard": Smoke(["{python}", "{bench}/shard_bench.py", "--build", "{build}", "--bytes", "8M", "--tensors", "2",
                    "--world", "2", "--load-world", "3", "--runs", "1", "--reshard-worlds", "2,3"], [
        Lines({"bench": "shard", "reshard_vs_tcp_reason": None}, (
            "torch", "bytes", "world", "load_world", "dcp_save_shoal_s", "dcp_save_filesystem_s",
            "dcp_save_vs_filesystem", "dcp_load_reshard_shoal_s", "dcp_load_reshard_filesystem_s",
            "dcp_load_reshard_vs_filesystem", "reshard_vs_tcp", "reshard_2to3_s", "reshard_2to3_tcp_s",
            "reshard_3to2_s", "reshard_3to2_tcp_s", "reshard_state_bytes") + SHARD_PARTS,
              nullable=("bytes", "dcp_save_shoal_s", "dcp_save_filesystem_s", "dcp_save_vs_filesystem",
                        "dcp_load_reshard_shoal_s", "dcp_load_reshard_filesystem_s", "dcp_load_reshard_vs_filesystem",
                        "reshard_vs_tcp", "reshard_2to3_s", "reshard_2to3_tcp_s", "reshard_3to2_s", "reshard_3to2_tcp_s",
                        "reshard_state_bytes") + SHARD_PARTS),
    ], needs=("python", "torch")),
    "torch_elastic": Smoke(["{python}", "{bench}/torch_elastic_bench.py", "--build", "{build}", "--system", "all",
                            "--hosts", "3", "--kills", "1", "--torchrun-launch-only"], [
        Lines({"system": "elastic", "result": "kill"}, ("kill_to_step_ms", "join_to_step_ms", "rebuild_ms")),
        Lines({"system": "elastic", "result": "summary"}, ELASTIC_SUMMARY + ("survivors_restarted",)),
        # No TCPStore phases: examples/python/ddp_flash.py bootstraps from the agents' store by default.
        Lines({"system": "restart", "result": "kill"}, ("kill_to_step_ms", "join_to_step_ms", "steps_lost",
                                                        "bad_loads") + RESTART_PHASES,
              nullable=("phases_ms.store_listening", "phases_ms.store_connected")),
        Lines({"system": "restart", "result": "summary"}, ELASTIC_SUMMARY + (
            "workers_restarted", "steps_lost", "bad_loads", "join_steps_lost", "join_bad_loads")),
        Lines({"system": "torchrun", "result": "summary"}, ("hosts", "baseline_step_ms", "workers_restarted",
                                                            "ratio")),
    ], needs=("python", "torch")),
    # Agents with connected DDP trainers (any torch shoal.torch runs on); one drain of three hosts.
    "drain": Smoke(["{python}", "{bench}/drain_bench.py", "--build", "{build}", "--hosts", "3", "--drains", "1"], [
        Lines({"bench": "drain", "result": "drain"}, ("drain_to_step_ms", "drain_steps_redone", "drained_exit",
                                                      "step_ms")),
        Lines({"bench": "drain", "result": "summary"}, ("drain_to_step_p50_ms", "drain_to_step_max_ms",
                                                        "drain_steps_redone", "step_ms_p50", "met")),
    ], needs=("python", "torch")),
    # The same DDP job twice, without and with one kill of three hosts, to the end of its run.
    "ettr": Smoke(["{python}", "{bench}/ettr_bench.py", "--build", "{build}", "--hosts", "3", "--steps", "120",
                   "--kills", "1"], [
        Lines({"bench": "ettr", "run": None}, ("ettr_p50", "ettr_min", "whole_run_hosts", "wall_s")),
        Lines({"bench": "ettr", "result": "summary"}, ("ettr_no_kills", "ettr_kills", "ettr_ratio")),
    ], needs=("python", "torch")),
    # Its hosts run a torch 2.6+ interpreter (FSDP2): this one's, else the build's -Dtest_pythons; skipped without.
    "torch_fsdp": Smoke(["{python}", "{bench}/torch_fsdp_bench.py", "--build", "{build}", "--hosts", "3", "--kills",
                         "1"], [
        Lines({"system": "elastic_fsdp", "result": "kill"}, ("kill_to_step_ms", "join_to_step_ms", "rebuild_ms",
                                                             "restored_step", "steps_lost", "bad_restores")),
        Lines({"system": "elastic_fsdp", "result": "summary"}, ELASTIC_SUMMARY + (
            "steps_lost.total", "survivors_restarted", "bad_restores", "torch")),
    ], needs=("python", "torch2")),
}


def fill(text, build):
    return text.replace("{build}", build).replace("{bench}", os.path.join(SOURCE, "bench")).replace("{python}", PYTHON)


def missing_need(need, build):
    """Why this machine cannot run a benchmark that needs `need` (a reason to skip), or None."""
    if need == "trainer":
        path = os.path.join(build, "examples", "allreduce_trainer")
        return None if os.access(path, os.X_OK) else "this build has no example trainer (%s)" % path
    if need == "python":
        path = os.path.join(build, "python", "shoal", "__init__.py")
        return None if os.path.exists(path) else "this build has no Python package (%s)" % path
    if need == "lab":
        sys.path.insert(0, os.path.join(SOURCE, "tests", "lab"))
        os.environ["PATH"] += ":/usr/sbin:/sbin"
        from lab_net import missing_prerequisite  # the lab's own test of root, tools and namespaces
        return missing_prerequisite()
    if need == "torch":
        p = subprocess.run([PYTHON, "-c", "import torch, torch.distributed"], capture_output=True, text=True)
        return None if p.returncode == 0 else "%s cannot import torch (python3-torch)" % PYTHON
    if need == "torch2":  # FSDP2: this interpreter's torch if 2.6 or newer, else the build's -Dtest_pythons
        p = subprocess.run([PYTHON, os.path.join(SOURCE, "bench", "torch_fsdp_bench.py"), "--find-python", "--build",
                            build], capture_output=True, text=True)
        return None if p.returncode == 0 else p.stdout.strip() or p.stderr.strip()[-300:]
    raise ValueError("unknown need %r" % need)


def field_of(doc, path):
    """(True, value) for a dotted path present in doc, else (False, None)."""
    for part in path.split("."):
        if not isinstance(doc, dict) or part not in doc:
            return False, None
        doc = doc[part]
    return True, doc


def matches(doc, where):
    return all(k in doc and (v is None or doc[k] == v) for k, v in where.items())


def not_a_number(text):
    raise ValueError("%s is no figure" % text)  # JSON has no NaN or Infinity; Python's json would accept them


def check_output(stdout, expect):
    """The problems of a benchmark's stdout against `expect`, as sentences (empty: none)."""
    problems, docs = [], []
    for n, line in enumerate(stdout.splitlines(), 1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line, parse_constant=not_a_number)
        except ValueError as e:
            doc = e
        if not isinstance(doc, dict):
            problems.append("stdout line %d is not one JSON object (%s): %r" % (
                n, doc if isinstance(doc, ValueError) else type(doc).__name__, line[:200]))
            continue
        docs.append(doc)
    for e in expect:
        chosen = [d for d in docs if matches(d, e.where)]
        if not chosen:
            problems.append("no line matches %s" % json.dumps(e.where))
        for d in chosen:
            for f in e.fields:
                present, value = field_of(d, f)
                if not present:
                    problems.append("a line matching %s lacks %r" % (json.dumps(e.where), f))
                elif value is None and f not in e.nullable:
                    problems.append("a line matching %s has %r null" % (json.dumps(e.where), f))
    return problems


def run(name, build):
    smoke = SMOKES[name]
    for need in smoke.needs:
        why = missing_need(need, build)
        if why:
            print("SKIP: %s: %s" % (name, why))
            return 77
    argv = [fill(a, build) for a in smoke.argv]
    tmp = tempfile.mkdtemp(prefix="shoal-bench-smoke-")
    env = dict(os.environ, TMPDIR=tmp, **{k: fill(v, build) for k, v in smoke.env.items()})
    env.pop("SHOAL_LOG", None)  # the benchmarks choose their own log levels (several read the agents' logs)
    print("bench_smoke: %s: %s" % (name, " ".join(argv)), flush=True)
    t0 = time.monotonic()
    # A session of its own, so that a timeout can stop the benchmark and what it started.
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=env, cwd=tmp, start_new_session=True)
    timed_out = False
    try:
        stdout, _ = p.communicate(timeout=smoke.timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        stop(p)
        try:
            stdout, _ = p.communicate(timeout=10)
        except subprocess.TimeoutExpired:  # something outside its session holds the pipe
            stdout = ""
    wall = time.monotonic() - t0
    sys.stdout.write(stdout)
    problems = []
    if timed_out:
        problems.append("it did not finish within its smoke timeout of %d s (stopped)" % smoke.timeout_s)
    elif p.returncode != 0:
        problems.append("it exited %s" % p.returncode)
    problems += check_output(stdout, smoke.expect)
    if problems:
        print("FAIL: bench %s after %.1f s (%s):\n  %s\n  its temporary files are kept in %s" % (
            name, wall, " ".join(argv), "\n  ".join(problems), tmp))
        return 1
    shutil.rmtree(tmp, ignore_errors=True)
    print("bench_smoke: %s: passed in %.1f s (%d line kinds, %d fields checked)" % (
        name, wall, len(smoke.expect), sum(len(e.fields) for e in smoke.expect)))
    return 0


def coverage(build):
    """The benchmarks without a smoke run, as sentences (empty: none)."""
    problems = []
    scripts = sorted(n[:-len("_bench.py")] for n in os.listdir(os.path.join(SOURCE, "bench"))
                     if n.endswith("_bench.py"))
    built = os.path.join(build, "bench")
    programs = sorted(n[len("shoal-bench-"):].replace("-", "_") for n in os.listdir(built) if n.startswith(
        "shoal-bench-") and os.path.isfile(os.path.join(built, n)) and os.access(os.path.join(built, n), os.X_OK))
    for name in scripts + programs:
        if name not in SMOKES:
            problems.append("benchmark %r has no entry in SMOKES (%s)" % (name, __file__))
    with open(os.path.join(build, "meson-info", "intro-tests.json")) as f:
        tests = {t["name"] for t in json.load(f) if any(s.endswith(":bench") for s in t["suite"])}
    for name, smoke in sorted(SMOKES.items()):
        if "bench_" + name in tests:
            continue
        why = [missing_need(n, build) for n in smoke.needs if n in ("trainer", "python")]
        if not any(why):
            problems.append("SMOKES entry %r is no test of the bench suite (tests/bench/meson.build)" % name)
    return problems


def stop(p):
    """SIGINT first (the Python benchmarks stop what they started in `finally`), then SIGKILL to whatever
    of its session is left."""
    for sig, grace in ((signal.SIGINT, 15), (signal.SIGKILL, 5)):
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            return
        try:
            p.wait(grace)
        except subprocess.TimeoutExpired:
            pass


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("name", nargs="?", choices=sorted(SMOKES))
    ap.add_argument("--build", help="the meson build directory")
    ap.add_argument("--list", action="store_true", help="print the benchmarks' names")
    ap.add_argument("--coverage", action="store_true", help="check that every benchmark has a smoke run")
    a = ap.parse_args()
    if a.list:
        print("\n".join(sorted(SMOKES)))
        return 0
    if a.coverage and a.build:
        problems = coverage(os.path.abspath(a.build))
        print("\n".join(["FAIL: " + p for p in problems]) or "bench_smoke: every benchmark has a smoke run")
        return 1 if problems else 0
    if not a.name or not a.build:
        ap.error("NAME and --build are required")
    return run(a.name, os.path.abspath(a.build))


if __name__ == "__main__":
    sys.exit(main())

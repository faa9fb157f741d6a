#!/usr/bin/python3
"""dcp.save into shoal's memory against dcp.save with DCP's own FileSystemWriter into /dev/shm, and dcp.load
onto another world from each, in one run (issue 38's DCP targets); then the reshard restore of an FSDP2 state
(model + AdamW) 4 -> 3 -> 4 hosts (--reshard-worlds) against a raw TCP stream of the bytes that cross hosts
(bench/shard_restore.py).

A sharded state of --bytes (float32 DTensors, Shard(0) over a 1-D mesh of --world ranks; --tensors of them)
on --world processes on loopback, each with an embedded shoal agent and shoal.torch.init_process_group().
Each round saves the same state both ways (shoal first or second, alternating), untimed twice first (shoal's
first save into each of its two versions and the filesystem's first files fault their memory in), then --runs
timed rounds; a
save's time is the slowest rank's wall time of dcp.save, which includes DCP's planning collectives (shoal's
replication of a version to a peer, in the background, is waited for after each round, untimed). Then a
world of --load-world ranks (the same job and host names, one more or fewer) loads the newest step with
dcp.load from the directory (FileSystemReader) and, where this build of shoal reads ranges of other ranks'
versions (Session.read_ranges), from shoal's memory, resharded by DCP's planner.

JSON lines: one per round and system, then the summary:
  {"bench": "shard", "torch": V, "bytes": B, "world": N, "load_world": M, "runs": R,
   "dcp_save_shoal_s": S, "dcp_save_filesystem_s": F, "dcp_save_vs_filesystem": F/S,
   "dcp_load_reshard_shoal_s": L or null, "dcp_load_reshard_filesystem_s": G,
   "dcp_load_reshard_vs_filesystem": G/L or null, "dcp_load_reshard_reason": why null,
   "reshard_vs_tcp": W, "reshard_vs_tcp_reason": null, "reshard_state_bytes": S,
   "reshard_4to3_s": .., "reshard_4to3_tcp_s": .., "reshard_4to3_copy_s": .., "reshard_4to3_crossed_bytes": ..,
   "reshard_4to3_vs_tcp": .., and the same for 3to4,
   where the load's time goes, per direction (as the load timed it: Checkpointer.last_reshard; null where
   a build's load does not say):
   "reshard_4to3_local_bytes": bytes read from each new rank's own host's memory (summed over ranks),
   "reshard_4to3_local_s": those reads' wall time (the slowest rank's), "reshard_4to3_remote_bytes",
   "reshard_4to3_remote_s": the same of the fetches from peers, "reshard_4to3_remote_vs_tcp": remote_s over
   the TCP baseline (the same bytes, the same runs), "reshard_4to3_by_rank": [{"rank", "local_bytes",
   "local_s", "remote_bytes", "remote_s", "total_s"}] each new rank's medians; and the same for 3to4}
(the worlds' sizes in those names are --reshard-worlds'; one line per load world's round before it, "op":
"reshard_restore", with that rank's parts).
--only reshard runs the reshard restore alone (the dcp_* figures null, with a reason); --only dcp the DCP half.
Figures are medians over rounds; *_vs_filesystem is how many times faster shoal is (issue 38: >= 5 for the
save, >= 3 for the load); reshard_vs_tcp is the worse direction's load time over its TCP baseline's (issue 38:
<= 1.25).

usage: shard_bench.py [--bytes 256M] [--tensors 8] [--world 2] [--load-world 3] [--runs 5] [--build DIR]
                      [--python PATH] [--reshard-bytes B] [--reshard-worlds N,M] [--only all|dcp|reshard]
--python: the interpreter the ranks run (torch 2.x); default this one, or else the build's -Dtest_pythons.
"""
import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time

import shard_restore  # bench/shard_restore.py
from ports import free_port_block  # bench/ports.py

HERE = os.path.abspath(__file__)
REPO = os.path.dirname(os.path.dirname(HERE))
# Untimed rounds first: shoal keeps two versions per rank, each faulted in by its first save; the filesystem's
# page cache likewise.
WARMUP = 2
RESHARD_VS_TCP_REASON = "skipped (--reshard-bytes 0)"
# Per direction of the reshard restore, every field its summary has (null until measured).
RESHARD_FIELDS = ("s", "tcp_s", "copy_s", "crossed_bytes", "vs_tcp", "local_bytes", "local_s", "remote_bytes",
                  "remote_s", "remote_vs_tcp", "by_rank")


def log(msg):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr, flush=True)


def parse_bytes(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1].upper()] if text[-1].upper() in units else int(text)


# --- one rank ---

def rank_setup(rank, world, port0, job):
    import torch
    import shoal
    import shoal.torch
    torch.set_num_threads(1)
    session = shoal.Session.start(insecure=True, name="h%d" % rank, host="h%d" % rank,
                                  bind="127.0.0.1:%d" % (port0 + rank),
                                  seeds=[] if rank == 0 else ["127.0.0.1:%d" % port0], cluster=job, job=job,
                                  min_hosts=world, control_path="none",
                                  log_spec=os.environ.get("SHOAL_BENCH_LOG", "warn"))
    shoal.torch.init_process_group(session)
    return session


def sharded_state(world, total_bytes, tensors, fill, unit):
    """{"t<i>": DTensor} of float32 rows sharded evenly over `world` ranks (rows a multiple of `unit`, which
    both worlds divide)."""
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Shard
    mesh = init_device_mesh("cpu", (world,))
    cols = 1024
    rows = max(unit, (total_bytes // (4 * cols * tensors)) // unit * unit)
    rank = dist.get_rank()
    per = rows // world
    state = {}
    for i in range(tensors):
        if fill:
            local = torch.randn(per, cols, generator=torch.Generator().manual_seed(1000 * i + rank))
        else:
            local = torch.zeros(per, cols)
        state["t%d" % i] = DTensor.from_local(local, mesh, [Shard(0)], run_check=False, shape=(rows, cols),
                                              stride=(cols, 1))
    return state, rows * cols * 4 * tensors


def timed(fn):
    import torch.distributed as dist
    dist.barrier()
    began = time.perf_counter()
    fn()
    took = time.perf_counter() - began
    dist.barrier()
    return took


def save_worker(rank, world, port0, job, total_bytes, tensors, runs, directory, unit, reshard_bytes=0):
    import torch.distributed as dist
    import torch.distributed.checkpoint as dcp
    from shoal.torch.dcp import ShoalStorageWriter
    session = rank_setup(rank, world, port0, job)
    state, nbytes = sharded_state(world, total_bytes, tensors, True, unit)
    for run in range(runs + WARMUP):
        order = ("shoal", "filesystem") if run % 2 == 0 else ("filesystem", "shoal")
        for system in order:
            if system == "shoal":
                took = timed(lambda: dcp.save(state, storage_writer=ShoalStorageWriter(session, step=run + 1)))
                # The agent replicates the version to a peer in the background: let it finish outside the timed
                # saves (on a machine of few cores it would otherwise slow whichever save comes next).
                session.wait_checkpoint_safe(run + 1, 60.0)
            else:
                path = os.path.join(directory, "step-%d" % (run + 1))
                took = timed(lambda: dcp.save(state, storage_writer=dcp.FileSystemWriter(path)))
                if rank == 0:  # keep only the newest directory, as shoal keeps two versions: /dev/shm stays bounded
                    for old in os.listdir(directory):
                        if old != os.path.basename(path):
                            shutil.rmtree(os.path.join(directory, old), ignore_errors=True)
            print(json.dumps({"rank": rank, "run": run, "system": system, "save_s": took, "bytes": nbytes}),
                  flush=True)
    session.wait_checkpoint_safe(runs + WARMUP, 60.0)
    if reshard_bytes:  # the reshard restore's save, in this world (its steps above DCP's)
        del state
        import shard_restore
        shard_restore.save_worker(rank, world, session, reshard_bytes)
    dist.barrier()
    # Gone as a killed world is: its versions stay in /dev/shm (a graceful leave removes them) for the load world,
    # whose first hosts have the same names. The driver removes them at the end.
    os._exit(0)


def leave_saved(session):
    """Ends this rank without leaving (its host's memory keeps its slots and replicas for the next world), once
    every rank's save is held where it must be (each rank waited for its own before the barrier). A rank that
    passed the barrier and ended already changes the view under one still inside it: that is the end too."""
    import shoal
    import torch.distributed as dist
    try:
        dist.barrier()
    except shoal.ViewChanged:
        pass
    os._exit(0)


def reshard_worker(task, rank, world, port0, job, total_bytes, runs):
    """A world of the reshard restore (bench/shard_restore.py): save, load and save again, or load."""
    import torch.distributed as dist
    import shard_restore
    session = rank_setup(rank, world, port0, job)
    if task == "reshard_save":
        shard_restore.save_worker(rank, world, session, total_bytes)
    else:
        shard_restore.load_worker(rank, world, session, total_bytes, runs, then_save=task == "reshard_load_save")
    if task != "reshard_load":
        leave_saved(session)
    dist.barrier()
    dist.destroy_process_group()
    session.leave()


def load_worker(rank, world, port0, job, total_bytes, tensors, runs, directory, unit, reshard_bytes=0):
    import torch.distributed as dist
    import torch.distributed.checkpoint as dcp
    from shoal.torch.dcp import ShoalStorageReader
    from shoal.torch.dcp_cross_world import has_ranged_reads
    session = rank_setup(rank, world, port0, job)
    state, nbytes = sharded_state(world, total_bytes, tensors, False, unit)
    path = os.path.join(directory, "step-%d" % (runs + WARMUP))
    for run in range(runs):
        took = timed(lambda: dcp.load(state, storage_reader=dcp.FileSystemReader(path)))
        print(json.dumps({"rank": rank, "run": run, "system": "filesystem", "load_s": took}), flush=True)
        if has_ranged_reads(session):
            took = timed(lambda: dcp.load(state, storage_reader=ShoalStorageReader(session, step=runs + WARMUP)))
            print(json.dumps({"rank": rank, "run": run, "system": "shoal", "load_s": took}), flush=True)
    if reshard_bytes:  # the reshard restore's first load and its save, in this world
        del state
        import shard_restore
        shard_restore.load_worker(rank, world, session, reshard_bytes, runs, then_save=True)
        leave_saved(session)
    dist.barrier()
    dist.destroy_process_group()
    session.leave()


# --- the driver ---

def run_world(args, python, task, world, port0, job, directory, total_bytes=None, reshard_bytes=0):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(args.build, "python")
    env.setdefault("SHOAL_LOG", "warn")
    procs = [subprocess.Popen([python, HERE, "--worker", task, str(r), str(world), str(port0), job,
                               str(args.bytes if total_bytes is None else total_bytes),
                               str(args.tensors), str(args.runs), directory, str(args.unit), str(reshard_bytes)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for r in range(world)]
    rows, failed = [], []
    try:
        for r, p in enumerate(procs):
            out, err = p.communicate(timeout=900)
            if p.returncode != 0:
                failed.append("%s rank %d exited %d:\n%s" % (task, r, p.returncode, err.decode()[-3000:]))
            rows += [json.loads(line) for line in out.decode().splitlines() if line.startswith("{")]
        if failed:
            raise RuntimeError("\n".join(failed))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return rows


def remove_segments(prefix):
    """Removes /dev/shm/shoal.<prefix>*: the segments of the job(s) whose store names start so."""
    for name in [f for f in os.listdir("/dev/shm") if f.startswith("shoal.%s" % prefix)]:
        try:
            os.unlink(os.path.join("/dev/shm", name))
        except FileNotFoundError:
            pass


def torch_of(python):
    p = subprocess.run([python, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else None


def new_enough(version):
    return version is not None and tuple(int(x) for x in version.split("+")[0].split(".")[:2]) >= (2, 6)


def choose_python(args):
    """--python, else this interpreter when its torch is 2.6 or newer, else the build's -Dtest_pythons."""
    if args.python:
        return args.python
    if new_enough(torch_of(sys.executable)):
        return sys.executable
    try:
        with open(os.path.join(args.build, "meson-info", "intro-buildoptions.json")) as f:
            options = {o["name"]: o["value"] for o in json.load(f)}
        for candidate in options.get("test_pythons", []):
            if new_enough(torch_of(candidate)):
                return candidate
    except (OSError, ValueError, KeyError):
        pass
    return sys.executable


def slowest_by_run(rows, system, key):
    runs = {}
    for r in rows:
        if r.get("system") == system and key in r:
            runs[r["run"]] = max(runs.get(r["run"], 0.0), r[key])
    return runs


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        a = sys.argv[2:]
        if a[0].startswith("reshard"):
            reshard_worker(a[0], int(a[1]), int(a[2]), int(a[3]), a[4], int(a[5]), int(a[7]))
            return
        worker = {"save": save_worker, "load": load_worker}[a[0]]
        worker(int(a[1]), int(a[2]), int(a[3]), a[4], int(a[5]), int(a[6]), int(a[7]), a[8], int(a[9]), int(a[10]))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bytes", default="256M")
    ap.add_argument("--tensors", type=int, default=8)
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--load-world", type=int, default=3)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--build", default=os.path.join(REPO, "build"))
    ap.add_argument("--python", default=None)
    ap.add_argument("--reshard-worlds", default="4,3",
                    help="N,M: the reshard restore goes N -> M -> N hosts (when N,M is --world,--load-world it runs "
                         "in the DCP worlds' processes)")
    ap.add_argument("--reshard-bytes", default=None,
                    help="the FSDP2 state (model + AdamW) of the reshard restore (default "
                         "--bytes; 0: skip it)")
    ap.add_argument("--only", choices=("all", "dcp", "reshard"), default="all",
                    help="run only the DCP half or only the reshard restore (the other's figures null, with a reason)")
    args = ap.parse_args()
    args.bytes = parse_bytes(args.bytes)
    args.reshard_bytes = args.bytes if args.reshard_bytes is None else parse_bytes(args.reshard_bytes)
    if args.only == "dcp":
        args.reshard_bytes = 0
    try:
        args.reshard_worlds = tuple(int(x) for x in args.reshard_worlds.split(","))
    except ValueError:
        args.reshard_worlds = ()
    if len(args.reshard_worlds) != 2 or not all(1 <= w <= 12 for w in args.reshard_worlds) or \
            args.reshard_worlds[0] == args.reshard_worlds[1]:
        ap.error("--reshard-worlds is two different world sizes of 1 to 12, e.g. 4,3")
    if not (1 <= args.world <= 12 and 1 <= args.load_world <= 12):
        ap.error("--world and --load-world are 1 to 12")
    args.unit = args.world * args.load_world // math.gcd(args.world, args.load_world)
    python = choose_python(args)
    version = torch_of(python)
    summary = {"bench": "shard", "torch": version, "python": python, "bytes": None, "world": args.world,
               "load_world": args.load_world, "runs": args.runs, "tensors": args.tensors,
               "dcp_save_shoal_s": None, "dcp_save_filesystem_s": None, "dcp_save_vs_filesystem": None,
               "dcp_load_reshard_shoal_s": None, "dcp_load_reshard_filesystem_s": None,
               "dcp_load_reshard_vs_filesystem": None, "dcp_load_reshard_reason": None,
               "reshard_vs_tcp": None,
               "reshard_vs_tcp_reason": "skipped (--only dcp)" if args.only == "dcp" else RESHARD_VS_TCP_REASON}
    big, small = args.reshard_worlds
    for a, b in ((big, small), (small, big)):
        summary.update({"reshard_%dto%d_%s" % (a, b, k): None for k in RESHARD_FIELDS})
    summary["reshard_state_bytes"] = None
    if not new_enough(version):
        reason = "needs torch 2.6 or newer (FSDP2/DTensor and DCP's storage interface); %s has %s" % (python, version)
        summary.update(dcp_save_reason=reason, dcp_load_reshard_reason=reason, reshard_vs_tcp_reason=reason)
        print(json.dumps(summary), flush=True)
        return
    job = "shardb%d" % os.getpid()
    directory = "/dev/shm/shoal-shard-bench-%d" % os.getpid()
    os.makedirs(directory)
    try:
        # The reshard restore runs in the DCP worlds' processes when its worlds are theirs (a smoke run starts
        # one world more, not three), else in worlds of its own, under a job of its own.
        rbytes = args.reshard_bytes
        dcp = args.only != "reshard"
        shared = dcp and rbytes > 0 and (big, small) == (args.world, args.load_world)
        saves = loads = []
        if dcp:
            saves = run_world(args, python, "save", args.world, free_port_block(args.world + 1), job, directory,
                              reshard_bytes=rbytes if shared else 0)
            loads = run_world(args, python, "load", args.load_world, free_port_block(args.load_world + 1), job,
                              directory, reshard_bytes=rbytes if shared else 0)
        if rbytes > 0:
            rjob = job if shared else job + "r"
            if shared:
                shrink = loads
            else:
                # The DCP worlds' segments go first (their worlds ended without leaving): the reshard worlds' saves
                # and replicas need the room.
                remove_segments(job + "-")
                run_world(args, python, "reshard_save", big, free_port_block(big + 1), rjob, directory, rbytes)
                shrink = run_world(args, python, "reshard_load_save", small, free_port_block(small + 1), rjob,
                                   directory, rbytes)
            grow = run_world(args, python, "reshard_load", big, free_port_block(big + 1), rjob, directory, rbytes)
            for row in shrink + grow:
                if row.get("system") == "reshard":
                    print(json.dumps({"bench": "shard", "op": "reshard_restore", **row}), flush=True)
            figures = shard_restore.summary(shrink, grow, big, small)
            if figures is not None:
                summary.update(figures, reshard_vs_tcp_reason=None)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        remove_segments(job)
    if not dcp:
        summary.update(dcp_save_reason="skipped (--only reshard)", dcp_load_reshard_reason="skipped (--only reshard)")
        print(json.dumps(summary), flush=True)
        return
    summary["bytes"] = saves[0]["bytes"]
    timed_runs = range(WARMUP, args.runs + WARMUP)  # the first are the untimed warm-ups
    medians = {}
    for system in ("shoal", "filesystem"):
        per_run = slowest_by_run(saves, system, "save_s")
        for run in timed_runs:
            print(json.dumps({"bench": "shard", "op": "dcp_save", "run": run, "system": system,
                              "seconds": round(per_run[run], 4)}), flush=True)
        medians[system] = statistics.median(per_run[r] for r in timed_runs)
    summary.update(dcp_save_shoal_s=round(medians["shoal"], 4), dcp_save_filesystem_s=round(medians["filesystem"], 4),
                   dcp_save_vs_filesystem=round(medians["filesystem"] / medians["shoal"], 2))
    fs_loads = slowest_by_run(loads, "filesystem", "load_s")
    shoal_loads = slowest_by_run(loads, "shoal", "load_s")
    summary["dcp_load_reshard_filesystem_s"] = round(statistics.median(fs_loads.values()), 4)
    if shoal_loads:
        summary["dcp_load_reshard_shoal_s"] = round(statistics.median(shoal_loads.values()), 4)
        summary["dcp_load_reshard_vs_filesystem"] = round(
            summary["dcp_load_reshard_filesystem_s"] / summary["dcp_load_reshard_shoal_s"], 2)
    else:
        summary["dcp_load_reshard_reason"] = ("this build of shoal cannot read ranges of other ranks' versions "
                                              "(shoal.Session.read_ranges): a load onto another world is refused")
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()

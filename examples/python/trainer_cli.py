"""The flags and the session start that examples/python/elastic_ddp.py and elastic_fsdp.py share (the flags
of examples/allreduce_trainer), and the step line's common fields."""
import argparse
import json
import os
import sys
import time

import shoal


def parse(argv, prog, doc):
    """(args, connect): the parsed flags, and whether to connect to this host's `shoal agent` rather than
    embed one. Exits 2 (argparse) on bad flags."""
    ap = argparse.ArgumentParser(prog=prog, description=doc.split("\n\n")[1].replace("\n", " "),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--name")
    ap.add_argument("--bind")
    ap.add_argument("--seeds", default="")
    ap.add_argument("--cluster", default="")
    ap.add_argument("--slots", type=int, default=1)
    ap.add_argument("--min-hosts", type=int, default=1)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--step-ms", type=int, default=0)
    ap.add_argument("--log-level", default="warn")
    ap.add_argument("--control", default="")
    ap.add_argument("--slot", type=int, default=0)
    ap.add_argument("--ckpt-every", type=int, default=0)
    ap.add_argument("--job", default="")
    ap.add_argument("--host", default="")
    ap.add_argument("--ckpt-dir", default="")
    ap.add_argument("--key-file", default="", help="the cluster key (shoal keygen); or SHOAL_KEY_FILE")
    ap.add_argument("--insecure", action="store_true", help="no cluster key: any host that reaches the port may join")
    ap.add_argument("--loader", action="store_true", help="batches from a torch DataLoader with the ElasticSampler")
    ap.add_argument("--loader-workers", type=int, default=0, help="the DataLoader's worker processes (--loader)")
    ap.add_argument("--abort-at", type=int, default=-1, help="rank 0 aborts its own communicator once, before "
                    "that step's collectives, as a reset connection would (tests)")
    args = ap.parse_args(argv)
    connect = bool(args.control) or (not args.name and os.environ.get("SHOAL_CONTROL"))
    if not connect and (not args.name or not args.bind):
        ap.error("--name and --bind are required (or --control PATH)")
    if args.min_hosts < 1 or args.steps < 0 or args.step_ms < 0 or args.ckpt_every < 0 or args.loader_workers < 0:
        ap.error("--steps, --step-ms, --ckpt-every, --loader-workers take non-negative integers, --min-hosts at "
                 "least 1")
    return args, connect


def start_session(args, connect, prog):
    """The session (embedded agent, or this host's agent), after printing the "started" line; None (after a
    message on stderr) when it could not start."""
    try:
        if connect:
            session = shoal.Session.connect(control_path=args.control, slot=args.slot, log_spec=args.log_level)
        else:
            session = shoal.Session.start(name=args.name, bind=args.bind, cluster=args.cluster,
                                          seeds=[s for s in args.seeds.split(",") if s], slots=args.slots,
                                          min_hosts=args.min_hosts, log_spec=args.log_level, job=args.job,
                                          host=args.host, ckpt_dir=args.ckpt_dir, key_file=args.key_file,
                                          insecure=args.insecure)
    except shoal.Error as e:
        print("%s: %s" % (prog, e), file=sys.stderr)
        return None
    print(json.dumps({"event": "started", "name": "" if connect else args.name, "addr": session.address}), flush=True)
    return session


def step_line(job, step, ok, ckpt_every):
    """The fields of a completed step's line up to its checks: t, step, epoch, rank, world, ok, and after a
    rebuild rebuild_ms, attempt, restored_step and restore_source, saved (each reported once); discarded and
    steps_redone (this rank's counts so far)."""
    out = {"t": round(time.time(), 6), "step": step, "epoch": job.ranks.epoch, "rank": job.comm.rank,
           "world": job.comm.world_size, "ok": ok}
    if job.rebuild_ms is not None:
        out["rebuild_ms"] = round(job.rebuild_ms, 1)
        job.rebuild_ms = None
    if job.ranks.attempt:
        out["attempt"] = job.ranks.attempt
    if job.restored_step is not None:
        out.update(restored_step=job.restored_step, restore_source="checkpoint")
        job.restored_step = None
    if ckpt_every and (step + 1) % ckpt_every == 0:
        out["saved"] = True
    out.update(discarded=job.discarded, steps_redone=job.steps_redone)
    return out


def end_line(job):
    """The last line: "event" drained (the host drained: `shoal drain`; "safe": a peer held the checkpoint of
    the last step) or done, the last completed step, the steps discarded and redone on this rank, and the run's
    ETTR (productive training time over wall time, Elastic.stats())."""
    out = {"t": round(time.time(), 6), "event": "drained" if job.drained else "done", "last_step": job.completed,
           "discarded": job.discarded, "steps_redone": job.steps_redone}
    stats = getattr(job, "stats", None)
    if stats is not None:
        out["ettr"] = round(stats().ettr, 4)  # productive training time / wall time (Elastic.stats())
    if job.drained:
        out["safe"] = bool(job.drain_safe)
    return out

#!/usr/bin/python3
"""elastic_ddp: in-place elastic PyTorch DDP (Gloo underneath) with shoal; the Python twin of
examples/allreduce_trainer, with its flags and its output lines, so that every test and benchmark that
drives one drives the other.

usage: elastic_ddp.py --name NAME --bind HOST:PORT [--seeds HOST:PORT,...] [--cluster ID] [--slots 1]
                      [--min-hosts N] [--steps N] [--step-ms MS] [--log-level SPEC] [--ckpt-every K]
                      [--job NAME] [--host NAME] [--ckpt-dir DIR] [--abort-at STEP]
                      [--loader [--loader-workers N]] (--key-file PATH | --insecure)
       elastic_ddp.py --control PATH [--slot K] [...]

The agent is embedded (first form) or this host's `shoal agent` (second form, or SHOAL_CONTROL when the
agent started this script with --workers connect). A small MLP trains on a synthetic regression
dataset; shoal.torch.Elastic rebuilds the process group and the DDP wrapper in this process at every view
change; survivors keep their state, newcomers receive it, and the data position (ElasticSampler) goes
with it. With --loader the batches come from a torch DataLoader over the dataset whose sampler is the
ElasticSampler (--loader-workers worker processes), as a user's own loader would.

stdout: first {"event":"started","name":...,"addr":"ip:port"}, then one JSON object per completed step:
t, step, epoch, rank, world, ok (every rank held the same parameters when the step began: an allreduce
of their hash, min == max; and the loss is finite), pid, pos and data_epoch (the data position the step
started from), loss; after a rebuild rebuild_ms and state_ok (the same check, right after the state
sync); after a checkpoint load restored_step, restore_source ("checkpoint"), state_ok; saved: true when
the step was checkpointed. Exits 0 after --steps steps with every check passed, 1 when a check failed,
2 on bad flags.
"""
import argparse
import json
import logging
import os
import sys
import time
import zlib

import torch
import torch.distributed as dist

import shoal
import shoal.torch

DATASET = 4096
BATCH = 8


def parse(argv):
    ap = argparse.ArgumentParser(prog="elastic_ddp.py", description=__doc__.split("\n\n")[1].replace("\n", " "),
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


def params_hash(module):
    crc = 0
    for p in module.parameters():
        crc = zlib.crc32(p.detach().contiguous().view(torch.uint8).numpy().tobytes(), crc)
    return crc


def same_everywhere(value):
    """Whether every rank passed the same integer: an allreduce of min and max on the current group."""
    t = torch.tensor([value, -value], dtype=torch.int64)
    dist.all_reduce(t, op=dist.ReduceOp.MIN)
    return int(t[0]) == value and int(-t[1]) == value


def main(argv):
    args, connect = parse(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
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
        print("elastic_ddp: %s" % e, file=sys.stderr)
        return 2
    print(json.dumps({"event": "started", "name": "" if connect else args.name, "addr": session.address}), flush=True)

    torch.set_num_threads(1)
    torch.manual_seed(0)  # the same initial model on every rank (Elastic checks it)
    g = torch.Generator().manual_seed(1)
    xs = torch.randn(DATASET, 16, generator=g)
    ys = xs @ torch.randn(16, 1, generator=g) + 0.1 * torch.randn(DATASET, 1, generator=g)
    data = list(zip(xs, ys))
    model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    sampler = shoal.torch.ElasticSampler(DATASET, BATCH)
    job = shoal.torch.Elastic(session, model, optimizer, sampler=sampler, ckpt_every=args.ckpt_every)
    source = data
    if args.loader:
        source = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(xs, ys), batch_size=BATCH, sampler=sampler,
                                             num_workers=args.loader_workers)

    all_ok = True
    injected = False
    last_rebuilds = -1
    try:
        for x, y in job.batches(source, steps=args.steps):
            step, pos, data_epoch = job.next_step, job.sampler.position, job.sampler.epoch
            line = {}
            with job.step():
                if step == args.abort_at and job.comm.rank == 0 and not injected:
                    injected = True
                    job.comm.abort("--abort-at %d: a fault injected for tests" % step)
                if args.step_ms:
                    time.sleep(args.step_ms / 1000.0)  # the "compute"
                ok = same_everywhere(params_hash(model))
                if job.rebuilds != last_rebuilds:  # the first step of a (re)built world
                    line["state_ok"] = ok
                loss = torch.nn.functional.mse_loss(job.model(x), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                ok = ok and bool(torch.isfinite(loss))
                line.update(loss=round(float(loss), 6))
            if job.next_step != step + 1:
                continue  # discarded: the next iteration rebuilds and redoes it
            last_rebuilds = job.rebuilds
            all_ok = all_ok and ok and line.get("state_ok", True)
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
            if args.ckpt_every and (step + 1) % args.ckpt_every == 0:
                out["saved"] = True
            out.update(line, pid=os.getpid(), pos=pos, data_epoch=data_epoch)
            print(json.dumps(out), flush=True)
    except shoal.Error as e:
        print("elastic_ddp: %s" % e, file=sys.stderr)
        job.close()
        session.leave()
        return 1
    job.close()
    session.leave()
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

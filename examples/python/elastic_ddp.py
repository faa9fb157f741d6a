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
the step was checkpointed. Last, the line of trainer_cli.end_line: "event" drained (`shoal drain`: the loop
ended at a step boundary; "safe": a peer held that step's checkpoint) or done, "last_step", "discarded", "steps_redone".
Exits 0 after --steps steps (or a drain) with every check passed, 1 when a check failed,
2 on bad flags.
"""
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

import trainer_cli

DATASET = 4096
BATCH = 8


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
    args, connect = trainer_cli.parse(argv, "elastic_ddp.py", __doc__)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    session = trainer_cli.start_session(args, connect, "elastic_ddp")
    if session is None:
        return 2

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
            out = trainer_cli.step_line(job, step, ok, args.ckpt_every)
            out.update(line, pid=os.getpid(), pos=pos, data_epoch=data_epoch)
            print(json.dumps(out), flush=True)
    except shoal.Error as e:
        print("elastic_ddp: %s" % e, file=sys.stderr)
        job.close()
        session.leave()
        return 1
    print(json.dumps(trainer_cli.end_line(job)), flush=True)
    job.close()
    session.leave()
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

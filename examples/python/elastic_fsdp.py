#!/usr/bin/python3
"""elastic_fsdp: in-place elastic PyTorch FSDP2 (fully_shard over the shoal process group, Gloo underneath)
with flash checkpoints; the FSDP2 sibling of examples/python/elastic_ddp.py, with its flags and its output
lines, so that every test and benchmark that drives one drives the other.

usage: elastic_fsdp.py --name NAME --bind HOST:PORT [--seeds HOST:PORT,...] [--cluster ID] [--slots 1]
                       [--min-hosts N] [--steps N] [--step-ms MS] [--log-level SPEC] [--ckpt-every K]
                       [--job NAME] [--host NAME] [--ckpt-dir DIR] [--abort-at STEP]
                       [--loader [--loader-workers N]] (--key-file PATH | --insecure)
       elastic_fsdp.py --control PATH [--slot K] [...]

A small MLP, sharded with fully_shard over the view's world, trains with AdamW on elastic_ddp.py's
synthetic regression dataset. shoal.torch.ElasticFSDP rebuilds the process group, the DeviceMesh and the
sharded model in this process at every view change and loads the newest flash checkpoint into it,
resharded from the hosts' memory; --ckpt-every defaults to 1 here, and 0 means 1 (a checkpoint every step:
no step lost).

stdout: elastic_ddp.py's lines (see its docstring; state_ok: the full parameters agree across ranks right
after a (re)build), plus on every step "checksum": the crc32 of the full parameters after the step
(DTensor.full_tensor() of each parameter, in name order), the same on every rank; and on the first step
of a (re)built world "state_checksum": the same crc32 right after the build (after a restore: that of the
restored step). Last, the line of trainer_cli.end_line: "event" drained (`shoal drain`: the loop
ended at a step boundary; "safe": a peer held that step's checkpoint) or done, "last_step", "discarded", "steps_redone".
Exits 0 after --steps steps (or a drain) with every check passed, 1 when a check failed, 2 on bad
flags or torch without FSDP2.
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


def full_checksum(model):
    """crc32 of every parameter's full tensor (gathered from the shards: a collective), in name order."""
    crc = 0
    for _, p in sorted(model.named_parameters(), key=lambda kv: kv[0]):
        full = p.full_tensor() if hasattr(p, "full_tensor") else p
        crc = zlib.crc32(full.detach().contiguous().view(torch.uint8).numpy().tobytes(), crc)
    return crc


def same_everywhere(value):
    """Whether every rank passed the same integer: an allreduce of min and max on the current group."""
    t = torch.tensor([value, -value], dtype=torch.int64)
    dist.all_reduce(t, op=dist.ReduceOp.MIN)
    return int(t[0]) == value and int(-t[1]) == value


def build(mesh):
    try:
        from torch.distributed.fsdp import fully_shard
    except ImportError:
        from torch.distributed._composable.fsdp import fully_shard
    model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    for layer in (model[0], model[2]):
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model, torch.optim.AdamW(model.parameters(), lr=0.01)


def main(argv):
    args, connect = trainer_cli.parse(argv, "elastic_fsdp.py", __doc__)
    args.ckpt_every = args.ckpt_every or 1  # ElasticFSDP restores from flash checkpoints: 0 means the default
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    session = trainer_cli.start_session(args, connect, "elastic_fsdp")
    if session is None:
        return 2

    torch.set_num_threads(1)
    torch.manual_seed(0)  # the same initial model on every rank (ElasticFSDP checks it)
    g = torch.Generator().manual_seed(1)
    xs = torch.randn(DATASET, 16, generator=g)
    ys = xs @ torch.randn(16, 1, generator=g) + 0.1 * torch.randn(DATASET, 1, generator=g)
    data = list(zip(xs, ys))
    sampler = shoal.torch.ElasticSampler(DATASET, BATCH)
    try:
        job = shoal.torch.ElasticFSDP(session, build, sampler=sampler, ckpt_every=args.ckpt_every)
    except RuntimeError as e:
        print("elastic_fsdp: %s" % e, file=sys.stderr)
        session.leave()
        return 2
    source = data
    if args.loader:
        source = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(xs, ys), batch_size=BATCH, sampler=sampler,
                                             num_workers=args.loader_workers)

    all_ok = True
    injected = False
    last_comm = None  # the communicator of the world the last printed step ran in
    try:
        for x, y in job.batches(source, steps=args.steps):
            step, pos, data_epoch = job.next_step, job.sampler.position, job.sampler.epoch
            line, ok = {}, False
            with job.step():
                if step == args.abort_at and job.comm.rank == 0 and not injected:
                    injected = True
                    job.comm.abort("--abort-at %d: a fault injected for tests" % step)
                if args.step_ms:
                    time.sleep(args.step_ms / 1000.0)  # the "compute"
                if job.comm is not last_comm:  # the first step of a (re)built world (a collective: every rank)
                    before = full_checksum(job.model)
                    line.update(state_ok=same_everywhere(before), state_checksum=before)
                loss = torch.nn.functional.mse_loss(job.model(x), y)
                job.optimizer.zero_grad()
                loss.backward()
                job.optimizer.step()
                checksum = full_checksum(job.model)
                ok = same_everywhere(checksum) and bool(torch.isfinite(loss))
                line.update(loss=round(float(loss.detach()), 6), checksum=checksum)
            if job.next_step != step + 1 or "checksum" not in line:
                # Discarded, or applied but cut short before its checks (it was not saved: the restore after
                # the rebuild goes back to an earlier step): the next iterations rebuild and redo it.
                continue
            last_comm = job.comm
            all_ok = all_ok and ok and line.get("state_ok", True)
            out = trainer_cli.step_line(job, step, ok, args.ckpt_every)
            out.update(line, pid=os.getpid(), pos=pos, data_epoch=data_epoch)
            print(json.dumps(out), flush=True)
    except shoal.Error as e:
        print("elastic_fsdp: %s" % e, file=sys.stderr)
        job.close()
        session.leave()
        return 1
    print(json.dumps(trainer_cli.end_line(job)), flush=True)
    job.close()
    session.leave()
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

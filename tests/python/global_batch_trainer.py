#!/usr/bin/python3
"""A test trainer for shoal.torch.Elastic with a fixed global batch (ElasticSampler(global_batch=,
micro_batch=)), micro-batches and gradient accumulation, whatever the world.

Flags as examples/python/elastic_ddp.py's where they overlap (--name --host --bind --seeds --cluster --job
--min-hosts --insecure --step-ms); --global-batch B, --micro-batch b; --stop-file PATH: the ranks end after the
first step they all ran once PATH exists (an all-reduce inside the step). stdout: the "started" line; one JSON
line per completed step (step, world, rank, k: micro-batches per rank, params and momentum: every parameter
and its SGD momentum buffer after the step, flattened); {"event": "reset", ...} for every on_reset call (ResetInfo's fields); {"event": "stats", ...}
(job.stats()) at the end. The model, data and optimizer are reference_model() etc., which the test rebuilds in
one process to compute the same steps on the whole global batch."""
import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist

import shoal
import shoal.torch

DATASET, FEATURES = 600, 8


def reference_parts():
    """(model, optimizer, xs, ys): the same on every rank and in the test's reference."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(1)
    xs = torch.randn(DATASET, FEATURES, generator=g)
    ys = xs @ torch.randn(FEATURES, 1, generator=g) + 0.1 * torch.randn(DATASET, 1, generator=g)
    return model, optimizer, xs, ys


def fsdp_build(mesh):
    """build(mesh) for ElasticFSDP: the reference model, sharded with fully_shard, and its optimizer."""
    from torch.distributed.fsdp import fully_shard
    model, _, _, _ = reference_parts()
    fully_shard(model, mesh=mesh)
    return model, torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)


def fsdp_steps(job, data, steps):
    """(step, world, full parameters) after each of `steps` steps of ElasticFSDP `job` in micro-batches."""
    for batch in job.batches(data, steps=steps):
        step = job.next_step
        with job.step():
            job.optimizer.zero_grad()
            for x, y in job.micro_batches(batch):
                job.backward(torch.nn.functional.mse_loss(job.model(x), y))
            job.optimizer.step()
        params = torch.cat([p.full_tensor().detach().reshape(-1) for p in job.model.parameters()]).tolist()
        yield step, job.comm.world_size, params


def flat_params(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).tolist()


def flat_momentum(model, optimizer):
    """The SGD momentum buffers of every parameter, flattened (zeros before the first step)."""
    return torch.cat([optimizer.state.get(p, {}).get("momentum_buffer", torch.zeros_like(p)).detach().reshape(-1)
                      for p in model.parameters()]).tolist()


def main():
    ap = argparse.ArgumentParser()
    for flag in ("--name", "--host", "--bind", "--seeds", "--cluster", "--job", "--stop-file"):
        ap.add_argument(flag, default="")
    ap.add_argument("--min-hosts", type=int, default=1)
    ap.add_argument("--insecure", action="store_true")
    ap.add_argument("--step-ms", type=int, default=0)
    ap.add_argument("--global-batch", type=int, default=10)
    ap.add_argument("--micro-batch", type=int, default=2)
    args = ap.parse_args()
    session = shoal.Session.start(insecure=args.insecure, name=args.name, host=args.host, bind=args.bind,
                                  cluster=args.cluster, job=args.job, seeds=[s for s in args.seeds.split(",") if s],
                                  min_hosts=args.min_hosts, log_spec="warn")
    print(json.dumps({"event": "started", "name": args.name, "addr": session.address}), flush=True)
    torch.set_num_threads(1)
    model, optimizer, xs, ys = reference_parts()
    sampler = shoal.torch.ElasticSampler(DATASET, global_batch=args.global_batch, micro_batch=args.micro_batch,
                                         seed=3)

    def on_reset(info):
        print(json.dumps(dict(vars(info), event="reset")), flush=True)

    job = shoal.torch.Elastic(session, model, optimizer, sampler=sampler, on_reset=on_reset)
    data = list(zip(xs, ys))
    stop = False
    for batch in job.batches(data):
        step = job.next_step
        with job.step():
            world, rank = job.comm.world_size, job.comm.rank
            flag = torch.tensor([1.0 if args.stop_file and os.path.exists(args.stop_file) else 0.0])
            dist.all_reduce(flag, op=dist.ReduceOp.MAX)
            if args.step_ms:
                time.sleep(args.step_ms / 1000.0)
            optimizer.zero_grad()
            for x, y in job.micro_batches(batch):
                job.backward(torch.nn.functional.mse_loss(job.model(x), y))
            optimizer.step()
        if job.next_step != step + 1:
            continue  # discarded: redone after the rebuild
        print(json.dumps({"step": step, "world": world, "rank": rank, "k": sampler.plan(world).micro_batches,
                          "params": flat_params(model), "momentum": flat_momentum(model, optimizer)}), flush=True)
        if flag.item() > 0:
            break
    try:
        dist.barrier()  # no peer is left in the last step's collectives when this rank leaves
    except Exception:  # noqa: BLE001 (a peer gone already: the steps stand)
        pass
    print(json.dumps(dict(job.stats().as_dict(), event="stats")), flush=True)
    job.close()
    session.leave()
    return 0


if __name__ == "__main__":
    sys.exit(main())

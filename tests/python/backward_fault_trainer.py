#!/usr/bin/python3
"""A test trainer for shoal.torch.Elastic whose victim dies in the middle of a backward pass.

Same flags as examples/python/elastic_ddp.py where they overlap (--name --host --bind --seeds --cluster
--job --min-hosts --steps); --die-at STEP makes the process that holds rank --die-rank SIGKILL itself from
inside a backward hook of that step in the first world of 3, after part of the gradients' allreduce ran on its peers. One JSON
line per completed step: step, rank, world, ok (parameters identical on every rank when the step began),
state_ok (after a rebuild), pid.
"""
import argparse
import json
import os
import signal
import sys
import zlib

import torch
import torch.distributed as dist

import shoal
import shoal.torch

ap = argparse.ArgumentParser()
for flag in ("--name", "--host", "--bind", "--seeds", "--cluster", "--job"):
    ap.add_argument(flag, default="")
ap.add_argument("--min-hosts", type=int, default=1)
ap.add_argument("--insecure", action="store_true")
ap.add_argument("--steps", type=int, default=100)
ap.add_argument("--die-at", type=int, default=-1)
ap.add_argument("--die-rank", type=int, default=1)
ap.add_argument("--wait-world", type=int, default=1, help="start training once a view holds this many ranks")
args = ap.parse_args()

session = shoal.Session.start(insecure=args.insecure, name=args.name, host=args.host, bind=args.bind, cluster=args.cluster, job=args.job,
                              seeds=[s for s in args.seeds.split(",") if s], min_hosts=args.min_hosts,
                              log_spec="info")  # stderr is a file the test prints on a failure
print(json.dumps({"event": "started", "name": args.name, "addr": session.address}), flush=True)
info = session.wait_for_view(0, 60.0)
while info.world_size < args.wait_world:
    info = session.wait_for_view(info.epoch, 60.0)
torch.set_num_threads(1)
torch.manual_seed(0)
# Several layers, so DDP's gradients go in several buckets and a death can fall between two of them.
layers = []
for _ in range(6):
    layers += [torch.nn.Linear(256, 256), torch.nn.ReLU()]
model = torch.nn.Sequential(*layers, torch.nn.Linear(256, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.001)
job = shoal.torch.Elastic(session, model, optimizer, ddp_kwargs={"bucket_cap_mb": 0.25})
state = {"step": -1}


def die_in_backward(module, grad_in, grad_out):
    if state["step"] == args.die_at and job.comm.rank == args.die_rank and job.comm.world_size == 3:
        os.kill(os.getpid(), signal.SIGKILL)


model[0].register_full_backward_hook(die_in_backward)  # the first layer: its gradient comes last


def params_hash():
    crc = 0
    for p in model.parameters():
        crc = zlib.crc32(p.detach().contiguous().view(torch.uint8).numpy().tobytes(), crc)
    return crc


last_rebuilds = -1
while job.next_step < args.steps:
    job.ensure_world()
    step = job.next_step
    state["step"] = step
    g = torch.Generator().manual_seed(step * 31 + job.comm.rank)
    x, y = torch.randn(16, 256, generator=g), torch.randn(16, 1, generator=g)
    line = {}
    with job.step():
        h = torch.tensor([params_hash(), -params_hash()], dtype=torch.int64)
        dist.all_reduce(h, op=dist.ReduceOp.MIN)
        ok = int(h[0]) == params_hash() and -int(h[1]) == params_hash()
        if job.rebuilds != last_rebuilds:
            line["state_ok"] = ok
        loss = torch.nn.functional.mse_loss(job.model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    if job.next_step != step + 1:
        continue
    last_rebuilds = job.rebuilds
    print(json.dumps(dict(line, step=step, rank=job.comm.rank, world=job.comm.world_size, ok=ok, pid=os.getpid())),
          flush=True)
job.close()
session.leave()

#!/usr/bin/python3
"""A plain torchrun-style DDP training script: nothing in it knows about shoal.

It reads torchrun's environment through init_process_group("gloo") (env://), trains a small linear
model with DistributedDataParallel, and checkpoints to a file after every step (rank 0), resuming from
it when started again, as scripts written for torchrun's restart-the-world model do. Prints one JSON
line per step: step, rank, world, restart (TORCHELASTIC_RESTART_COUNT), loss.
"""
import argparse
import datetime
import json
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--step-s", type=float, default=0.1)
    parser.add_argument("--ckpt", required=True, help="checkpoint file, shared by the ranks")
    args = parser.parse_args()

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    start = 0
    if os.path.exists(args.ckpt):
        state = torch.load(args.ckpt)
        model.module.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = state["step"] + 1

    gen = torch.Generator().manual_seed(1000 * rank + start)
    for step in range(start, args.steps):
        x = torch.randn(32, 8, generator=gen)
        y = x.sum(dim=1, keepdim=True)
        loss = ((model(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()  # DDP's allreduce of the gradients over Gloo
        opt.step()
        if rank == 0:
            tmp = args.ckpt + ".tmp"
            torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step}, tmp)
            os.replace(tmp, args.ckpt)
        print(json.dumps({"step": step, "rank": rank, "world": world,
                          "restart": int(os.environ["TORCHELASTIC_RESTART_COUNT"]),
                          "loss": round(loss.item(), 5)}), flush=True)
        time.sleep(args.step_s)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

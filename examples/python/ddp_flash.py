#!/usr/bin/python3
"""A plain PyTorch DDP trainer (Gloo) that saves a flash checkpoint every step and resumes from it.

Run it under `shoal agent`, which starts one worker per slot with torchrun's environment and restarts
the workers after every view change (a host lost or joined):

    shoal agent --name h0 --bind 127.0.0.1:7946 --min-hosts 2 -- python3 examples/python/ddp_flash.py
    shoal agent --name h1 --bind 127.0.0.1:7947 --seeds 127.0.0.1:7946 -- python3 examples/python/ddp_flash.py

Each restarted worker loads the newest step that it and its peers all saved (a survivor from this host's
memory; a newcomer from a peer's replica) and goes on from the step after it.

The process group bootstraps from the store the agents serve for the view (shoal.torch.Store), or with
--store env from torchrun's MASTER_ADDR and MASTER_PORT, as any torchrun script does.

Output, one JSON object per line on stdout:
    {"event": "load", "step": S, "world": W, "rank": R, "pid": P, "checksum": C, "source": "local"|PEER,
     "seconds": T, "t": T}
    {"event": "fresh", ...}  when there was nothing to load
    {"step": S, "world": W, "rank": R, "pid": P, "checksum": C, "loss": L, "step_ms": D, "t": T}
where checksum is a CRC32 of every parameter's bytes (identical on every rank: DDP keeps replicas equal)
and t the wall-clock time the line was written (load lines carry it too).
"""
import argparse
import json
import os
import sys
import time
import zlib

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import shoal.torch


def param_checksum(model):
    crc = 0
    for p in model.parameters():
        crc = zlib.crc32(p.detach().contiguous().numpy().tobytes(), crc)
    return crc


def emit(doc):
    sys.stdout.write(json.dumps(doc) + "\n")
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=200, help="train until this step (default 200)")
    ap.add_argument("--step-ms", type=float, default=50.0, help="extra time per step, as compute (default 50)")
    ap.add_argument("--width", type=int, default=256, help="hidden width of the model (default 256)")
    ap.add_argument("--seed", type=int, default=0, help="model initialisation and data seed (default 0)")
    ap.add_argument("--store", choices=("shoal", "env"), default="shoal",
                    help="where the process group bootstraps from: shoal (the store the agents serve for this "
                         "view: no rank-0 TCPStore to wait for; default) or env (torchrun's MASTER_ADDR/PORT)")
    args = ap.parse_args()

    torch.set_num_threads(1)
    ckpt = shoal.torch.Checkpointer()
    if args.store == "shoal":
        comm = ckpt.communicator()
        dist.init_process_group("gloo", store=shoal.torch.Store(ckpt.session, comm), rank=comm.rank,
                                world_size=comm.world_size)
    else:
        dist.init_process_group("gloo")  # env://, as torchrun and `shoal agent` set it
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)
    net = torch.nn.Sequential(torch.nn.Linear(64, args.width), torch.nn.ReLU(), torch.nn.Linear(args.width, 8))
    model = DDP(net)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    start = 0
    got = ckpt.load()
    if got is not None:
        step, state = got
        model.module.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optim"])
        start = step + 1
        emit({"event": "load", "step": step, "world": world, "rank": rank, "pid": os.getpid(),
              "checksum": param_checksum(model.module), "source": ckpt.last_load.source,
              "seconds": round(ckpt.last_load.seconds, 6), "t": round(time.time(), 6)})
    else:
        emit({"event": "fresh", "world": world, "rank": rank, "pid": os.getpid(), "t": round(time.time(), 6)})

    for step in range(start, args.steps + 1):
        began = time.monotonic()
        g = torch.Generator().manual_seed(args.seed * 1_000_003 + step * 1009 + rank)
        x = torch.randn(32, 64, generator=g)
        y = torch.randn(32, 8, generator=g)
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if args.step_ms > 0:
            time.sleep(args.step_ms / 1000.0)
        ckpt.save(step, {"model": model.module.state_dict(), "optim": optimizer.state_dict(), "step": step})
        emit({"step": step, "world": world, "rank": rank, "pid": os.getpid(),
              "checksum": param_checksum(model.module), "loss": round(float(loss), 6),
              "step_ms": round((time.monotonic() - began) * 1000.0, 3), "t": round(time.time(), 6)})
    ckpt.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

"""Part 3 of torch_ckpt_bench.py, saving every step of a DDP job: 2 ranks as 2 processes, blocks of steps
with and without a save alternating (step_overhead[_replicated|_fenced]_pct). train_worker is one rank's
process (torch_ckpt_bench.py --worker); bench_training runs both and reports.
"""
import torch

import shoal.torch

from torch_ckpt_processes import Child, free_port, remove_segments, start_session
from torch_ckpt_report import emit, figure, log, median, now
from torch_ckpt_state import nbytes_of, tensors_of


def train_worker(spec):
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    torch.set_num_threads(1)
    rank = spec["rank"]
    s = start_session(spec["job"], "t%d" % rank, spec["replicas"], spec.get("seed"), 2, announce=rank == 0)
    try:
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % spec["port"], rank=rank, world_size=2)
        torch.manual_seed(0)
        width = spec["width"]
        net = torch.nn.Sequential(torch.nn.Linear(width // 2, width), torch.nn.ReLU(), torch.nn.Linear(width, width),
                                  torch.nn.ReLU(), torch.nn.Linear(width, width // 2))
        opt = torch.optim.Adam(net.parameters(), lr=1e-5)

        def compute(model, x, y):
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()

        def data(batch):
            g = torch.Generator().manual_seed(rank)
            return torch.randn(batch, width // 2, generator=g), torch.randn(batch, width // 2, generator=g)

        model = DDP(net)

        def timed_compute(batch):
            x, y = data(batch)
            compute(model, x, y)
            ts = []
            for _ in range(4):
                t = now()
                compute(model, x, y)
                ts.append(now() - t)
            return median(ts)

        def agreed(batch):  # both ranks must take the same batch (and the same branches below)
            b = torch.tensor([float(batch)])
            dist.all_reduce(b)
            return min(1024, max(1, int(round(float(b[0]) / 2))))
        # Calibrate the DDP step (forward, backward with its allreduce, Adam) to --step-ms under the load
        # of the moment: secant steps on t(batch), which is close to linear.
        b0, b1 = 2, 16
        t0, t1 = timed_compute(b0), timed_compute(b1)
        for _ in range(3):
            slope = (t1 - t0) / (b1 - b0)
            b = agreed(b1 + (spec["step_s"] - t1) / (slope if slope > 0 else t1 / b1))
            if b == b1:
                break
            b0, t0, b1, t1 = b1, t1, b, timed_compute(b)
        batch, compute_s = b1, t1
        x, y = data(batch)
        ck = shoal.torch.Checkpointer(s, safe_timeout=0)
        ck.communicator()
        state_bytes = sum(nbytes_of(t) for t in tensors_of({"m": net.state_dict(), "o": opt.state_dict()}))
        n = 0
        rows = {False: [], True: []}  # (whole step, its compute) in seconds
        saves = []

        def step(save, keep):
            nonlocal n
            t0 = now()
            compute(model, x, y)
            t1 = now()
            if save:
                ck.save(n, {"model": net.state_dict(), "optim": opt.state_dict(), "step": n},
                        fence=opt if spec.get("fence") else None)
            t2 = now()
            n += 1
            if keep:
                rows[save].append((t2 - t0, t1 - t0))
                if save:
                    saves.append(t2 - t1)
        for save in (True, True, True, False, False):  # warm-up: the first saves are cold
            step(save, False)
        for block in range(spec["blocks"]):
            for save in ((False, True) if block % 2 == 0 else (True, False)):
                for i in range(spec["block_steps"]):
                    step(save, i > 0)
        dist.barrier()
        emit({"rank": rank, "batch": batch, "compute_s": compute_s, "state_bytes": state_bytes,
              "params": sum(p.numel() for p in net.parameters()), "nosave": rows[False], "save": rows[True],
              "save_s": saves})
        dist.destroy_process_group()
    finally:
        s.leave()


def bench_training(args, job, logdir, replicas, fence=False):
    name = "step_overhead_fenced_pct" if fence else "step_overhead_replicated_pct" if replicas else "step_overhead_pct"
    log("training: 2 DDP ranks, ckpt_replicas=%d%s: starting them, calibrating the batch"
        % (replicas, ", save(fence=optimizer)" if fence else ""))
    spec = {"role": "train", "job": job, "replicas": replicas, "port": free_port(), "width": args.width,
            "step_s": args.step_ms / 1000.0, "blocks": args.runs, "block_steps": args.block_steps, "fence": fence}
    r0 = Child(dict(spec, rank=0), logdir, "train%d-r0" % replicas)
    hello = r0.line(120)
    r1 = Child(dict(spec, rank=1, seed=hello["addr"]), logdir, "train%d-r1" % replicas)
    results = [r0.line(900), r1.line(900)]
    r0.finish()
    r1.finish()
    remove_segments("shoal.%s*" % job)
    nosave = median([t for r in results for t, _ in r["nosave"]])
    save = median([t for r in results for t, _ in r["save"]])
    compute_nosave = median([c for r in results for _, c in r["nosave"]])
    compute_save = median([c for r in results for _, c in r["save"]])
    figure(name, (save - nosave) / nosave * 100.0, ckpt_replicas=replicas, ranks=2,
           state_bytes_per_rank=results[0]["state_bytes"], params=results[0]["params"], batch=results[0]["batch"],
           compute_s=round(median([r["compute_s"] for r in results]), 6), step_nosave_s=round(nosave, 6),
           step_save_s=round(save, 6), step_compute_nosave_s=round(compute_nosave, 6),
           step_compute_save_s=round(compute_save, 6),
           save_call_s=round(median([t for r in results for t in r["save_s"]]), 6), blocks=args.runs,
           steps_per_block=args.block_steps - 1)

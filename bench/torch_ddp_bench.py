#!/usr/bin/python3
"""DDP step time over the `shoal` process group against torch's own gloo backend, in one run.

N ranks on loopback (processes), the same model, data and DDP settings for both: an MLP of --width
(several DDP buckets), --steps timed steps after --warmup untimed ones, each step a forward, backward
(DDP all-reduces its buckets while autograd runs) and an optimizer step. gloo: torch's ProcessGroupGloo
through a TCPStore. shoal: an embedded shoal agent per rank (a real cluster on loopback, --insecure) and
shoal.torch.init_process_group(), whose collectives run asynchronously on shoal's Gloo communicator. The
two systems alternate --rounds times (gloo, shoal, gloo, ...) so that the machine's drift hits both.

One JSON line per round and system, then a summary:
  {"bench": "torch_ddp", "torch": V, "world": N, "params": P, "steps": S, "gloo_step_ms": G, "shoal_step_ms": H,
   "ddp_step_vs_gloo": H/G, ...}
step_ms is the median over ranks of each rank's median step; the ratio is of the medians over rounds.

usage: torch_ddp_bench.py [--world 4] [--width 1024] [--steps 30] [--warmup 5] [--rounds 3] [--build DIR]
                          [--python PATH]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from ports import free_port_block  # bench/ports.py

HERE = os.path.abspath(__file__)
REPO = os.path.dirname(os.path.dirname(HERE))


def log(msg):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr, flush=True)


def worker(system, rank, world, port0, width, steps, warmup, job):
    import datetime
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    session = None
    if system == "gloo":
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port0, rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=120))
    else:
        import shoal
        import shoal.torch
        session = shoal.Session.start(insecure=True, name="h%d" % rank, host="h%d" % rank,
                                      bind="127.0.0.1:%d" % (port0 + rank),
                                      seeds=[] if rank == 0 else ["127.0.0.1:%d" % port0], cluster=job, job=job,
                                      min_hosts=world, control_path="none", log_spec="warn")
        shoal.torch.init_process_group(session)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(256, width), torch.nn.ReLU(), torch.nn.Linear(width, width),
                              torch.nn.ReLU(), torch.nn.Linear(width, width), torch.nn.ReLU(),
                              torch.nn.Linear(width, 16))
    model = torch.nn.parallel.DistributedDataParallel(net)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    times = []
    for step in range(warmup + steps):
        g = torch.Generator().manual_seed(step * 31 + rank)
        x, y = torch.randn(64, 256, generator=g), torch.randn(64, 16, generator=g)
        began = time.perf_counter()
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step >= warmup:
            times.append(time.perf_counter() - began)
    dist.barrier()
    params = sum(p.numel() for p in net.parameters())
    print(json.dumps({"rank": rank, "step_ms": statistics.median(times) * 1000.0, "params": params}), flush=True)
    dist.destroy_process_group()
    if session is not None:
        session.leave()


def run_system(args, system, round_no):
    port0 = free_port_block(args.world + 1)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(args.build, "python")
    env.setdefault("SHOAL_LOG", "warn")
    job = "ddpb%dr%d" % (os.getpid(), round_no)
    procs = [subprocess.Popen([args.python, HERE, "--worker", system, str(r), str(args.world), str(port0),
                               str(args.width), str(args.steps), str(args.warmup), job],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for r in range(args.world)]
    rows = []
    for r, p in enumerate(procs):
        out, err = p.communicate(timeout=600)
        if p.returncode != 0:
            for q in procs:
                if q.poll() is None:
                    q.kill()
            raise RuntimeError("%s rank %d exited %d:\n%s" % (system, r, p.returncode, err.decode()[-3000:]))
        rows += [json.loads(l) for l in out.decode().splitlines() if l.startswith("{")]
    for path in [f for f in os.listdir("/dev/shm") if f.startswith("shoal.%s" % job)]:
        os.unlink(os.path.join("/dev/shm", path))
    return statistics.median(r["step_ms"] for r in rows), rows[0]["params"]


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        a = sys.argv[2:]
        worker(a[0], int(a[1]), int(a[2]), int(a[3]), int(a[4]), int(a[5]), int(a[6]), a[7])
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--world", type=int, default=4)
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--build", default=os.path.join(REPO, "build"))
    ap.add_argument("--python", default=sys.executable, help="the interpreter (and so the torch) the ranks run")
    args = ap.parse_args()
    torch_version = subprocess.run([args.python, "-c", "import torch; print(torch.__version__)"],
                                   stdout=subprocess.PIPE, check=True).stdout.decode().strip()
    medians = {"gloo": [], "shoal": []}
    params = 0
    for round_no in range(args.rounds):
        for system in ("gloo", "shoal"):
            step_ms, params = run_system(args, system, round_no)
            medians[system].append(step_ms)
            log("round %d %s: %.2f ms/step" % (round_no, system, step_ms))
            print(json.dumps({"bench": "torch_ddp", "round": round_no, "system": system, "step_ms": round(step_ms, 3)}),
                  flush=True)
    gloo, shoal_ms = statistics.median(medians["gloo"]), statistics.median(medians["shoal"])
    print(json.dumps({
        "bench": "torch_ddp", "torch": torch_version, "world": args.world, "width": args.width, "params": params,
        "steps": args.steps, "rounds": args.rounds, "gloo_step_ms": round(gloo, 3), "shoal_step_ms": round(shoal_ms, 3),
        "ddp_step_vs_gloo": round(shoal_ms / gloo, 3),
        "gloo_rounds_ms": [round(v, 2) for v in medians["gloo"]],
        "shoal_rounds_ms": [round(v, 2) for v in medians["shoal"]]}), flush=True)


if __name__ == "__main__":
    main()

"""torchrun in torch_elastic_bench.py: the Torchrun system (N of Debian's torchrun agents, c10d rendezvous,
the first agent hosting the store and never killed), and the two modes of torch_elastic_bench.py it runs:
--worker (worker_main, a plain DDP script with env:// init) and --torchrun-agent (torchrun_agent_main,
torch.distributed.run with Std.from_str fixed for Python 3.11).
"""
import json
import os
import re
import socket
import sys
import time

import torch_elastic_hosts as teh  # teh.PY: the interpreter the hosts run, set by the bench
from torch_elastic_hosts import free_port, wait_for
from torch_elastic_loop import System

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_elastic_bench.py")  # runs the modes below
DATASET, BATCH = 4096, 8


def worker_main(step_ms):
    """A plain DDP script (env:// init): elastic_ddp.py's model, data and sampler rule, and its lines."""
    import zlib
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    xs = torch.randn(DATASET, 16, generator=g)
    ys = xs @ torch.randn(16, 1, generator=g) + 0.1 * torch.randn(DATASET, 1, generator=g)
    model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    ddp = DDP(model)
    pos, data_epoch, order_epoch, order = 0, 0, None, None
    restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    step = 0
    while True:
        if pos + world * BATCH > DATASET:  # ElasticSampler's rule: the short tail starts the next epoch
            data_epoch, pos = data_epoch + 1, 0
        if order_epoch != data_epoch:
            order = torch.randperm(DATASET, generator=torch.Generator().manual_seed(data_epoch))
            order_epoch = data_epoch
        idx = order[pos + rank * BATCH:pos + (rank + 1) * BATCH]
        x, y = xs[idx], ys[idx]
        if step_ms:
            time.sleep(step_ms / 1000.0)
        crc = 0
        for p in model.parameters():
            crc = zlib.crc32(p.detach().contiguous().view(torch.uint8).numpy().tobytes(), crc)
        t = torch.tensor([crc, -crc], dtype=torch.int64)
        dist.all_reduce(t, op=dist.ReduceOp.MIN)
        ok = int(t[0]) == crc and int(-t[1]) == crc
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        ok = ok and bool(torch.isfinite(loss))
        print(json.dumps({"t": round(time.time(), 6), "step": step, "epoch": restart, "rank": rank, "world": world,
                          "ok": ok, "pid": os.getpid(), "pos": pos, "data_epoch": data_epoch,
                          "loss": round(float(loss), 6)}), flush=True)
        pos += world * BATCH
        step += 1


def torchrun_agent_main(argv):
    """torch.distributed.run with Std.from_str fixed for Python 3.11 (see torch_elastic_bench.py's docstring)."""
    from torch.distributed.elastic.multiprocessing import api
    from torch.distributed import run

    def from_str(cls, vm):
        if re.match(api._VALUE_REGEX, vm):
            return cls(int(vm))
        if re.match(api._MAPPING_REGEX, vm):
            return {int(i): cls(int(v)) for i, v in (m.split(":") for m in vm.split(","))}
        raise ValueError("%s does not match %s or %s" % (vm, api._VALUE_REGEX, api._MAPPING_REGEX))
    api.Std.from_str = classmethod(from_str)
    sys.argv = ["torchrun"] + argv
    run.main(argv)


class Torchrun(System):
    name, timeout, pause = "torchrun", 300, 1.0

    def __init__(self, a, logdir, job, shoal_summaries):
        super().__init__(a, logdir, job)
        self.kills, self.port, self.shoal = a.torchrun_kills, free_port(), shoal_summaries
        if a.torchrun_launch_only:
            self.kills = 0

    def start(self, seed=None):
        n = self.n
        argv = [teh.PY, BENCH, "--torchrun-agent", "--nnodes=%d:%d" % (n - 1, n), "--nproc_per_node=1",
                "--rdzv_backend=c10d", "--rdzv_endpoint=127.0.0.1:%d" % self.port, "--rdzv_id=shoalbench%d" % os.getpid(),
                "--max_restarts=%d" % (4 * self.kills + 4), BENCH, "--worker", "--step-ms", str(self.a.step_ms)]
        return self.spawn("t", argv, dict(os.environ, OMP_NUM_THREADS="1"))

    def launch(self):
        agents = [self.start()]

        def listening():  # the first agent must host the c10d store before the others start
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return True
            except OSError:
                return False
        if not wait_for(listening, 60, agents, "the c10d store"):
            raise RuntimeError("torchrun: the first agent never hosted the store (logs in %s)" % self.logdir)
        agents += [self.start() for _ in range(1, self.n)]
        return agents, agents[0].spawned

    def victim(self, hosts, k):
        return hosts[1 + k % (self.n - 1)]

    def join(self, hosts, k):
        joiner = self.start()
        return joiner, hosts[:1] + [joiner] + hosts[1:], joiner.spawned  # never hosts[0], the store's host

    def after_kill(self, before, victim, survivors, firsts, t_kill):
        return {"survivor_workers_restarted": sum(1 for name, d in firsts.items() if d["pid"] != before[name]),
                "first_step_after_kill": min(d["step"] for d in firsts.values())}

    def summary(self, recs, s):
        t50 = s["kill_to_step_ms"]["p50"]
        s["ratio"] = {o["system"]: round(t50 / o["kill_to_step_ms"]["p50"], 1) for o in self.shoal
                      if t50 and o["kill_to_step_ms"]["p50"]}
        s["met"] = {"%s_ratio_ge_20" % k: v >= 20 for k, v in s["ratio"].items()}
        s["note"] = ("defaults (c10d rendezvous, last_call 30 s, monitor_interval 5 s, keep-alive 5 s x 3); the first "
                     "agent hosts the c10d TCPStore (a single point of failure), never a victim; every survivor's "
                     "worker restarts from step 0 (no checkpoint); ratio: its kill p50 over each shoal system's")
        return s

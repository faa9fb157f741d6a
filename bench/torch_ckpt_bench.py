#!/usr/bin/python3
"""shoal.torch.Checkpointer against same-run baselines: save, load, peer load, and saving every step.

usage: bench/torch_ckpt_bench.py [--bytes 1G] [--runs 5] [--skip-training]
       (with this build's package: PYTHONPATH=build/python /usr/bin/python3 bench/torch_ckpt_bench.py)

1. One host, this process, an embedded session: a state of --bytes in a realistic mix (a mixed-precision
   model: bf16 weights, fp32 master weights, Adam's fp32 exp_avg and exp_avg_sq and step, a few hundred
   tensors) saved with Checkpointer.save. Each repetition runs, interleaved so that noise hits all of
   them: a plain copy of the same bytes into one pre-faulted buffer (ctypes.memmove per tensor,
   memcpy_s), a steady-state save (save_s, after two warm-up saves: the first save of a size faults
   fresh shared memory in and is reported apart as save_cold_s), load(into=state) into the existing
   tensors (load_into_s), load() into new tensors (load_new_s) and torch.save of the state to a file in
   /dev/shm (torch_save_s). Then a few more saves and loads with the package's calls timed stage by
   stage (lines with "profile").
2. Two hosts, two processes on loopback, replication off (ckpt_replicas=0): host b loads host a's
   version with Session.restore_into(saved_rank=a's rank) into its own existing tensors, as
   load(into=) does, which must fetch it from host a's agent over TCP (peer_load_s); alternated with a
   raw TCP stream of the same bytes from a to b over one loopback connection, received straight into
   the same pre-faulted tensors (tcp_s).
3. Saving every step in training: 2 DDP ranks as 2 processes (Gloo over loopback, one torch thread
   each, each with an embedded session), an MLP and Adam whose state is ~100 MB per rank, the batch
   calibrated at start (under the load of the moment) so that the DDP step -- forward, backward with
   its gradient allreduce, Adam -- takes ~--step-ms. Blocks of --block-steps steps
   with no save and with a save after every step alternate (--runs blocks of each, the first step of
   every block dropped); once with replication off, once with one replica on the peer (the default),
   and once with replication off and save(..., fence=optimizer), which copies the optimizer's tensors
   on a thread while the next step computes (its step() waits for the copy).
   step_overhead[_replicated|_fenced]_pct = (median step with a save - median step without) / without
   * 100, over both ranks' steps.

Every ratio is the ratio of two medians of --runs repetitions measured in the same run. Output: one JSON
object per line on stdout (inputs, medians in seconds, the figure, its target from issue 23 and whether
it is met); progress on stderr. A benchmark never fails a build: it exits non-zero only when it could
not measure.
"""
import argparse
import contextlib
import ctypes
import glob
import json
import os
import re
import select
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import torch

import shoal
import shoal.torch
from shoal.torch import placement as _placement

TARGETS = {"save_vs_memcpy": 1.2, "save_vs_torch_save": 0.2, "load_vs_memcpy": 1.2, "peer_load_vs_tcp": 1.25,
           "step_overhead_pct": 5.0, "step_overhead_replicated_pct": 10.0}
JOB_PREFIX = "torchckptbench"
now = time.perf_counter


def log(msg):
    sys.stderr.write("[torch_ckpt_bench %s] %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


def emit(doc):
    sys.stdout.write(json.dumps(doc) + "\n")
    sys.stdout.flush()


def median(xs):
    return statistics.median(xs) if xs else None


def parse_bytes(text):
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGkmg]?)(?:i?[Bb])?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError("a size like 1G, 256M or 1048576, not %r" % text)
    return int(float(m.group(1)) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()])


def figure(name, value, **fields):
    doc = {name: round(value, 4)}
    if name in TARGETS:
        doc.update(target=TARGETS[name], met=value <= TARGETS[name])
    doc.update(fields)
    doc["loadavg_1m"] = round(os.getloadavg()[0], 2)
    emit(doc)


def rounded(d, digits=6):
    return {k: (round(v, digits) if isinstance(v, float) else v) for k, v in d.items()}


# The state: a mixed-precision transformer's checkpoint


def make_state(nbytes, fill=True, layers=8):
    """A model's bf16 state_dict, fp32 master weights and an Adam state_dict (fp32 exp_avg, exp_avg_sq,
    scalar step tensors), ~nbytes in all: 14 bytes per parameter. Every tensor's pages are written."""
    per_param = 2 + 4 + 4 + 4
    elements = max(nbytes // per_param, 1 << 12)
    h = max(64, int((elements / 104) ** 0.5) // 64 * 64)  # 8 layers of 12 h^2, an embedding of ~8h rows
    shapes = []
    for i in range(layers):
        p = "layers.%d." % i
        shapes += [(p + "attn.qkv.weight", (3 * h, h)), (p + "attn.qkv.bias", (3 * h,)),
                   (p + "attn.proj.weight", (h, h)), (p + "attn.proj.bias", (h,)),
                   (p + "ln1.weight", (h,)), (p + "ln1.bias", (h,)), (p + "ln2.weight", (h,)), (p + "ln2.bias", (h,)),
                   (p + "mlp.fc1.weight", (4 * h, h)), (p + "mlp.fc1.bias", (4 * h,)),
                   (p + "mlp.fc2.weight", (h, 4 * h)), (p + "mlp.fc2.bias", (h,))]
    shapes += [("norm.weight", (h,)), ("norm.bias", (h,))]
    used = sum(torch.Size(s).numel() for _, s in shapes)
    shapes.insert(0, ("embed.weight", (max(1, (elements - used) // h), h)))

    def tensor(shape, dtype):
        t = torch.empty(shape, dtype=dtype)
        if fill:
            t.uniform_(-1.0, 1.0)
        else:
            t.fill_(0.5)  # faults every page in
        return t

    model = {name: tensor(s, torch.bfloat16) for name, s in shapes}
    master = {name: tensor(s, torch.float32) for name, s in shapes}
    adam = {i: {"step": torch.tensor(1000.0), "exp_avg": tensor(s, torch.float32),
                "exp_avg_sq": tensor(s, torch.float32).abs_()} for i, (_, s) in enumerate(shapes)}
    groups = [{"lr": 1e-4, "betas": (0.9, 0.95), "eps": 1e-8, "weight_decay": 0.1, "amsgrad": False,
               "maximize": False, "foreach": None, "capturable": False, "params": list(range(len(shapes)))}]
    return {"model": model, "master": master, "optim": {"state": adam, "param_groups": groups},
            "step": 1000, "rng": torch.get_rng_state()}


def tensors_of(obj):
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, dict):
        return [t for v in obj.values() for t in tensors_of(v)]
    if isinstance(obj, (list, tuple)):
        return [t for v in obj for t in tensors_of(v)]
    return []


def nbytes_of(t):
    return t.numel() * t.element_size()


def bytes_view(t):
    """A writable memoryview of a contiguous CPU tensor's bytes (bf16 has no numpy view)."""
    n = nbytes_of(t)
    return memoryview((ctypes.c_char * n).from_address(t.data_ptr())).cast("B") if n else memoryview(b"")


# Stage timing of the package's own calls (patched only while profiling)


@contextlib.contextmanager
def profiled(samples):
    """Times shoal.torch's calls stage by stage into samples[key] (lists of seconds)."""
    st, Save, Session = shoal.torch.state_tree, shoal.CheckpointSave, shoal.Session
    Ck, Plan = shoal.torch.Checkpointer, _placement.Plan
    saved = [(st, "flatten", st.flatten)] + [(Save, n, Save.__dict__[n]) for n in ("write", "write_many", "commit")] + \
        [(Session, n, Session.__dict__[n]) for n in ("begin_save", "restore_into")] + \
        [(Ck, n, Ck.__dict__[n]) for n in ("save", "load")] + [(Plan, "finish", Plan.__dict__["finish"])]
    originals = {name: getattr(owner, name) for owner, name, _ in saved}

    def timed(key, fn):
        def wrapper(*a, **k):
            t = now()
            try:
                return fn(*a, **k)
            finally:
                samples.setdefault(key, []).append(now() - t)
        return wrapper

    def restore_into(self, comm, placer, saved_rank=None):
        marks = {}

        def place(layout):
            marks["in"] = now()
            try:
                return placer(layout)
            finally:
                marks["out"] = now()
        t0 = now()
        r = originals["restore_into"](self, comm, place, saved_rank)
        t1 = now()
        if "in" in marks:
            samples.setdefault("load_agree_and_find_s", []).append(marks["in"] - t0)
            samples.setdefault("load_plan_s", []).append(marks["out"] - marks["in"])
            samples.setdefault("load_copy_and_agree_s", []).append(t1 - marks["out"])
        samples.setdefault("load_restore_into_s", []).append(t1 - t0)
        if r is not None:
            samples.setdefault("load_cpp_seconds", []).append(r.seconds)
        return r

    st.flatten = timed("save_flatten_s", originals["flatten"])
    Save.write = timed("save_write_meta_s", originals["write"])
    Save.write_many = timed("save_copy_s", originals["write_many"])
    Save.commit = timed("save_commit_s", originals["commit"])
    Session.begin_save = timed("save_begin_s", originals["begin_save"])
    Session.restore_into = restore_into
    Ck.save = timed("save_total_s", originals["save"])
    Ck.load = timed("load_total_s", originals["load"])
    Plan.finish = timed("load_finish_s", originals["finish"])
    try:
        yield samples
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


# Child processes


class Child:
    """A worker process running this file with --worker; JSON lines on its stdout, stderr to a log."""
    running = []

    def __init__(self, spec, logdir, name):
        self.name = name
        self.log = os.path.join(logdir, name + ".log")
        libc = ctypes.CDLL(None, use_errno=True)
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker", json.dumps(spec)], stdout=subprocess.PIPE,
            stderr=open(self.log, "w"), preexec_fn=lambda: libc.prctl(1, signal.SIGKILL))  # dies with us
        Child.running.append(self)
        self.buf = b""

    def line(self, timeout):
        """The next JSON line it prints; RuntimeError naming its log when it exits or times out first."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError("%s printed nothing within %.0f s (log: %s)" % (self.name, timeout, self.log))
            r, _, _ = select.select([self.proc.stdout], [], [], min(left, 1.0))
            if r:
                chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
                if not chunk:
                    self.proc.wait()
                    raise RuntimeError("%s exited %s: %s" % (self.name, self.proc.returncode, self.tail()))
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def tail(self):
        with open(self.log, errors="replace") as f:
            return "".join(f.readlines()[-15:])

    def finish(self, timeout=60):
        self.proc.wait(timeout=timeout)
        if self.proc.returncode != 0:
            raise RuntimeError("%s exited %d: %s" % (self.name, self.proc.returncode, self.tail()))

    @classmethod
    def kill_all(cls):
        for c in cls.running:
            if c.proc.poll() is None:
                c.proc.kill()
                c.proc.wait()
        cls.running = []


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_session(job, host, replicas, seed, min_hosts, announce=False):
    """An embedded session on loopback; announce prints its address (for the other host) before it waits
    for a view of min_hosts."""
    s = shoal.Session.start(
        insecure=True, name=host, host=host, bind="127.0.0.1:0", control_path="none", cluster=job, job=job,
        log_spec="warn", ckpt_replicas=replicas, seeds=[seed] if seed else [], min_hosts=min_hosts)
    if announce:
        emit({"addr": s.address})
    s.wait_for_view(0, 60.0)
    return s


def remove_segments(pattern):
    for path in glob.glob("/dev/shm/" + pattern):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def remove_stale_segments():
    """Segments and files of earlier runs of this bench whose process is gone."""
    for path in glob.glob("/dev/shm/*%s*" % JOB_PREFIX):
        m = re.search(JOB_PREFIX + r"(\d+)", path)
        if not m:
            continue
        try:
            os.kill(int(m.group(1)), 0)
        except ProcessLookupError:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        except PermissionError:
            pass


# 1. One host: save, load, torch.save, memcpy


def bench_local(args, job):
    log("building a state of %d bytes" % args.bytes)
    state = make_state(args.bytes)
    tensors = tensors_of(state)
    total = sum(nbytes_of(t) for t in tensors)
    buf = torch.ones(total, dtype=torch.uint8)  # pre-faulted: every page written
    base = buf.data_ptr()
    inputs = {"bytes": total, "tensors": len(tensors), "runs": args.runs}

    def memcpy():
        off = 0
        for t in tensors:
            n = nbytes_of(t)
            ctypes.memmove(base + off, t.data_ptr(), n)
            off += n

    path = "/dev/shm/%s.torch_save.pt" % job
    s = start_session(job, "solo", 1, None, 1)
    try:
        ck = shoal.torch.Checkpointer(s, safe_timeout=0)
        t = now()
        ck.save(0, state)
        cold = now() - t
        for step in (1, 2):  # both slots written once: steady state from here
            ck.save(step, state)
        memcpy()
        samples = {k: [] for k in ("memcpy_s", "save_s", "load_into_s", "load_new_s", "torch_save_s")}
        for r in range(args.runs):
            log("single host: repetition %d of %d" % (r + 1, args.runs))
            t = now()
            memcpy()
            samples["memcpy_s"].append(now() - t)
            t = now()
            ck.save(3 + r, state)
            samples["save_s"].append(now() - t)
            t = now()
            got = ck.load(into=state)
            samples["load_into_s"].append(now() - t)
            assert got[0] == 3 + r
            t = now()
            got = ck.load()
            samples["load_new_s"].append(now() - t)
            del got
            t = now()
            torch.save(state, path)
            samples["torch_save_s"].append(now() - t)
            os.unlink(path)
        log("single host: profiling the stages of save and load(into=)")
        stages = {}
        with profiled(stages):
            for r in range(args.runs):
                ck.save(100 + r, state)
                ck.load(into=state)
    finally:
        s.leave()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        remove_segments("shoal.%s*" % job)
    m = {k: median(v) for k, v in samples.items()}
    figure("save_vs_memcpy", m["save_s"] / m["memcpy_s"], **inputs, save_s=m["save_s"], memcpy_s=m["memcpy_s"],
           memcpy_gbps=round(total / m["memcpy_s"] / 1e9, 3), save_cold_s=round(cold, 6),
           save_cold_vs_memcpy=round(cold / m["memcpy_s"], 3))
    figure("save_vs_torch_save", m["save_s"] / m["torch_save_s"], **inputs, save_s=m["save_s"],
           torch_save_s=m["torch_save_s"])
    figure("load_vs_memcpy", m["load_into_s"] / m["memcpy_s"], **inputs, load_into_s=m["load_into_s"],
           memcpy_s=m["memcpy_s"])
    figure("load_new_vs_memcpy", m["load_new_s"] / m["memcpy_s"], **inputs, load_new_s=m["load_new_s"],
           memcpy_s=m["memcpy_s"])
    prof = rounded({k: median(v) for k, v in stages.items()})
    emit(dict(profile="save", **inputs, **{k: v for k, v in prof.items() if k.startswith("save_")}))
    emit(dict(profile="load_into", **inputs, **{k: v for k, v in prof.items() if k.startswith("load_")}))


# 2. A peer's memory over loopback against raw TCP


def peer_worker(spec):
    """Host a saves the big state and streams it; host b times loads of a's version and the stream."""
    torch.set_num_threads(1)
    a = spec["host"] == "a"
    if a:
        listener = socket.create_server(("127.0.0.1", 0))
        emit({"tcp_port": listener.getsockname()[1]})
    s = start_session(spec["job"], spec["host"], 0, spec.get("seed"), 2, announce=a)
    try:
        ck = shoal.torch.Checkpointer(s, safe_timeout=0)
        comm = ck.communicator()
        other = 1 - comm.rank
        state = make_state(spec["bytes"], fill=a)
        tensors = tensors_of(state)
        total = sum(nbytes_of(t) for t in tensors)
        if a:
            ck.save(1, state)
            conn, _ = listener.accept()
        else:
            ck.save(1, {"tiny": torch.zeros(1)})  # the step must be complete: every rank saved it
            conn = socket.create_connection(("127.0.0.1", spec["tcp_port"]))
        for r in range(spec["runs"] + 1):  # the first of each is a warm-up
            if a:
                if conn.recv(1) != b"g":
                    raise RuntimeError("the TCP peer went away")
                for t in tensors:
                    conn.sendall(bytes_view(t))
                s.restore_into(comm, lambda layout: [None] * len(layout.entries), saved_rank=comm.rank)
                continue
            t0 = now()
            conn.sendall(b"g")
            for t in tensors:
                view, got = bytes_view(t), 0
                while got < len(view):
                    n = conn.recv_into(view[got:], len(view) - got)
                    if n == 0:
                        raise RuntimeError("the TCP peer closed the stream")
                    got += n
            tcp = now() - t0
            marks, plan = {}, {}

            def place(layout):
                marks["in"] = now()
                plan["p"] = _placement.Plan(layout.first, [size for _, _, size in layout.entries[1:]], state,
                                            "rank %d's version" % other)
                marks["out"] = now()
                return [None] + plan["p"].destinations
            t0 = now()
            restored = s.restore_into(comm, place, saved_rank=other)
            t1 = now()
            plan["p"].finish()
            t2 = now()
            if restored.source == "local":
                raise RuntimeError("rank %d's version was found in this host's memory, not fetched" % other)
            if r:
                emit({"tcp_s": tcp, "peer_load_s": t2 - t0, "agree_and_fetch_s": marks["in"] - t0,
                      "plan_s": marks["out"] - marks["in"], "copy_out_and_agree_s": t1 - marks["out"],
                      "finish_s": t2 - t1, "cpp_seconds": restored.seconds, "bytes": total,
                      "tensors": len(tensors), "source": restored.source})
        # Neither leaves while the other may still be in the last restore (served by rank 0's agent).
        if a:
            conn.recv(1)
        else:
            conn.sendall(b"x")
        conn.close()
    finally:
        s.leave()
    emit({"done": True})


def bench_peer(args, job, logdir):
    log("two hosts: starting them (replication off)")
    spec = {"role": "peer", "job": job, "bytes": args.bytes, "runs": args.runs}
    a = Child(dict(spec, host="a"), logdir, "peer-a")
    port = a.line(120)["tcp_port"]
    b = Child(dict(spec, host="b", seed=a.line(120)["addr"], tcp_port=port), logdir, "peer-b")
    rows = []
    while True:
        doc = b.line(600)
        if doc.get("done"):
            break
        rows.append(doc)
        log("two hosts: repetition %d of %d: tcp %.3f s, peer load %.3f s" % (
            len(rows), args.runs, doc["tcp_s"], doc["peer_load_s"]))
    a.line(120)
    a.finish()
    b.finish()
    remove_segments("shoal.%s*" % job)
    m = {k: median([r[k] for r in rows]) for k in rows[0] if isinstance(rows[0][k], float)}
    inputs = {"bytes": rows[0]["bytes"], "tensors": rows[0]["tensors"], "runs": len(rows)}
    figure("peer_load_vs_tcp", m["peer_load_s"] / m["tcp_s"], **inputs, peer_load_s=m["peer_load_s"],
           tcp_s=m["tcp_s"], tcp_gbps=round(inputs["bytes"] / m["tcp_s"] / 1e9, 3), source=rows[0]["source"])
    emit(dict(profile="peer_load", **inputs, **rounded({k: v for k, v in m.items() if k not in ("tcp_s",)})))


# 3. Saving every step of a DDP job


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




def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bytes", type=parse_bytes, default=1 << 30,
                    help="size of the state for save/load/peer load, e.g. 1G, 256M (default 1G)")
    ap.add_argument("--runs", type=int, default=5,
                    help="repetitions behind every median, and training blocks of each kind (default 5, at least 5 "
                         "for the issue's figures)")
    ap.add_argument("--skip-training", action="store_true", help="skip the two DDP training runs (part 3)")
    ap.add_argument("--skip-peer", action="store_true", help="skip the two-host peer load (part 2)")
    ap.add_argument("--step-ms", type=float, default=200.0,
                    help="training: the DDP step (forward, backward, allreduce, Adam) the batch is calibrated to "
                         "(default 200)")
    ap.add_argument("--width", type=int, default=2048,
                    help="training: MLP width; 2048 gives 8.4 M parameters, 100 MB of state with Adam (default 2048)")
    ap.add_argument("--block-steps", type=int, default=6,
                    help="training: steps per block, the first dropped (default 6)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        spec = json.loads(args.worker)
        (peer_worker if spec["role"] == "peer" else train_worker)(spec)
        return 0
    if args.runs < 1 or args.block_steps < 2:
        ap.error("--runs must be at least 1 and --block-steps at least 2")
    torch.set_num_threads(1)
    remove_stale_segments()
    job = "%s%d" % (JOB_PREFIX, os.getpid())
    logdir = tempfile.mkdtemp(prefix="shoal-torch-ckpt-bench-")
    emit({"bench": "torch_ckpt_bench", "bytes": args.bytes, "runs": args.runs, "cpus": os.cpu_count(),
          "torch": torch.__version__, "shoal": shoal.__version__, "loadavg": [round(x, 2) for x in os.getloadavg()]})
    try:
        bench_local(args, job + "-solo")
        if not args.skip_peer:
            bench_peer(args, job + "-peer", logdir)
        if not args.skip_training:
            bench_training(args, job + "-train0", logdir, 0)
            bench_training(args, job + "-train1", logdir, 1)
            bench_training(args, job + "-train2", logdir, 0, fence=True)
    except (RuntimeError, shoal.Error) as e:
        log("failed: %s (children's logs in %s)" % (e, logdir))
        return 1
    finally:
        Child.kill_all()
        remove_segments("shoal.%s*" % job)
        remove_segments("%s*" % job)
    log("done (children's logs in %s)" % logdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The reshard restore half of shard_bench.py (issue 38's reshard_vs_tcp): an FSDP2 state (model and AdamW) of
about --bytes saved with shoal.torch.Checkpointer by one world and loaded into fresh FSDP2 state by a world of
another size (Checkpointer.load(into=): each rank reads only the saved byte ranges its new shards overlap),
every rank its own host (an embedded agent each, on loopback), so that the shards another host holds cross TCP.
The baseline, in the same processes right after each load: every rank receives, over a plain TCP socket from
each host it read from, as many bytes as that host gave it (what Session.read_ranges took from peers), all ranks
at once. Both are timed as the slowest rank's wall time between two barriers. Beside it, a second baseline of the
same kind: every rank copies its share of the state (state / world bytes) between two warm buffers, all at once
(reshard_*_copy_s): on one machine every "host" shares its cores and memory, so the copies of the bytes each rank
reads from its own host's memory, which cross no network, are there too, and this is their floor.

SHOAL_BENCH_LOG (default warn) is each rank's agent log level, e.g. info to see views and replication.

Worker tasks (run by shard_bench.py as `--worker TASK ...`, or at the end of its DCP worlds' tasks):
  reshard_save        world N saves step 1000 and ends without leaving (its hosts' memory keeps slots and replicas)
  reshard_load_save   world M loads the newest step --runs times (timed, with the TCP baseline each time), then
                      saves it as step 1001 and ends without leaving
  reshard_load        the same without the save
"""
import json
import os
import socket
import threading
import time

LAYER_COLS = 1024
# The reshard restore's steps: above any step the DCP half saves in the same job.
SAVE_STEP = 1000
RECV_SLICE = 4 << 20
# The parts of a load each rank reports (shoal.torch.reshard_load.read_stats): its reads from this host's
# memory and from peers (bytes asked, wall seconds), and the whole load's seconds as the load timed it.
PARTS = ("local_bytes", "local_s", "remote_bytes", "remote_s", "total_s")


def _model(world, total_bytes):
    """(model, AdamW) on a 1-D mesh of `world`: Linear layers (no bias) whose parameters and two moments make
    about total_bytes; their local shards filled from a generator seeded by the rank."""
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    try:
        from torch.distributed.fsdp import fully_shard
    except ImportError:
        from torch.distributed._composable.fsdp import fully_shard
    rows_total = max(12, total_bytes // (3 * 4 * LAYER_COLS))  # parameters + exp_avg + exp_avg_sq, float32
    layers = max(1, min(8, rows_total // 1024))
    rows = max(12, rows_total // layers // 12 * 12)  # divisible by 3 and 4: even shards in both worlds
    with torch.device("meta"):
        model = torch.nn.Sequential(*[torch.nn.Linear(LAYER_COLS, rows, bias=False) for _ in range(layers)])
    mesh = init_device_mesh("cpu", (world,))
    for layer in model:
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    model.to_empty(device="cpu")
    g = torch.Generator().manual_seed(dist.get_rank())
    with torch.no_grad():
        for p in model.parameters():
            p.to_local().copy_(torch.randn(p.to_local().shape, generator=g))
    opt = torch.optim.AdamW(model.parameters(), lr=0.0)
    for p in model.parameters():  # the moments exist after a step: one with zero gradients, no collective
        p.grad = torch.zeros_like(p)
    opt.step()
    opt.zero_grad(set_to_none=True)
    nbytes = sum(p.numel() * 4 * 3 for p in model.parameters())
    return model, opt, nbytes


def _state(model, opt):
    return {"model": model.state_dict(), "optim": opt.state_dict()}


def _counting_reads(session_class):
    """Wraps Session.read_ranges to add, per source host, the bytes each call asked for; returns the dict."""
    crossed = {}
    original = session_class.read_ranges

    def read_ranges(self, step, saved_rank, ranges):
        source = original(self, step, saved_rank, ranges)
        if source != "local":
            crossed[source] = crossed.get(source, 0) + sum(r[2] for r in ranges)
        return source

    session_class.read_ranges = read_ranges
    return crossed


def _tcp_baseline(rank, world, wants):
    """wants[r][h]: bytes rank r receives from rank h. Every rank serves what others want of it and receives
    what it wants, each pair over its own loopback connection, all at once; returns this rank's wall time."""
    import torch.distributed as dist
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(world)
    listener.settimeout(120)
    ports = [None] * world
    dist.all_gather_object(ports, listener.getsockname()[1])
    serve = sum(1 for r in range(world) if wants[r].get(rank, 0) > 0)
    payload = memoryview(bytearray(RECV_SLICE))
    errors = []

    def server():
        try:
            for _ in range(serve):
                conn, _ = listener.accept()
                with conn:
                    conn.settimeout(120)
                    asked = int.from_bytes(conn.recv(8, socket.MSG_WAITALL), "little")
                    sent = 0
                    while sent < asked:
                        n = min(RECV_SLICE, asked - sent)
                        conn.sendall(payload[:n])
                        sent += n
        except OSError as e:
            errors.append(e)

    def receive(h, nbytes):
        try:
            with socket.create_connection(("127.0.0.1", ports[h]), timeout=120) as conn:
                conn.sendall(int(nbytes).to_bytes(8, "little"))
                buf = memoryview(bytearray(RECV_SLICE))
                got = 0
                while got < nbytes:
                    n = conn.recv_into(buf, min(RECV_SLICE, nbytes - got))
                    if n == 0:
                        raise OSError("the baseline's sender closed early")
                    got += n
        except OSError as e:
            errors.append(e)

    dist.barrier()
    began = time.perf_counter()
    threads = [threading.Thread(target=server)] + [threading.Thread(target=receive, args=(h, n))
                                                   for h, n in sorted(wants[rank].items()) if n > 0]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.perf_counter() - began
    listener.close()
    if errors:
        raise errors[0]
    dist.barrier()
    return took


def _copy_baseline(src, dst):
    """This rank's wall time to copy its share of the state between two warm buffers, all ranks at once: what
    the load's copies cost where every host shares this machine's cores and memory."""
    import torch.distributed as dist
    dist.barrier()
    began = time.perf_counter()
    dst.copy_(src)
    took = time.perf_counter() - began
    dist.barrier()
    return took


def load_worker(rank, world, session, total_bytes, runs, then_save):
    import torch.distributed as dist
    import shoal
    import shoal.torch
    crossed = _counting_reads(shoal.Session)
    model, opt, nbytes = _model(world, total_bytes)
    ckpt = shoal.torch.Checkpointer(session, safe_timeout=0)
    import torch
    share = nbytes // world
    src, dst = torch.ones(share, dtype=torch.uint8), torch.zeros(share, dtype=torch.uint8)
    for run in range(runs):
        crossed.clear()
        dist.barrier()
        began = time.perf_counter()
        step, _ = ckpt.load(into=_state(model, opt))
        took = time.perf_counter() - began
        dist.barrier()
        # Which rank each holder is: hosts are h<rank> in every world of this benchmark.
        mine = {int(h[1:]): n for h, n in crossed.items()}
        wants = [None] * world
        dist.all_gather_object(wants, mine)
        tcp = _tcp_baseline(rank, world, wants)
        copy = _copy_baseline(src, dst)
        # Where the load's time went, as the load itself timed it (Checkpointer.last_reshard).
        parts = ckpt.last_reshard or {}
        print(json.dumps({"rank": rank, "run": run, "system": "reshard", "world": world, "step": step,
                          "load_s": took, "tcp_s": tcp, "copy_s": copy, "crossed_bytes": sum(mine.values()),
                          "state_bytes": nbytes, **{k: parts.get(k) for k in PARTS}}), flush=True)
    del src, dst
    if then_save:
        ckpt.save(SAVE_STEP + 1, _state(model, opt))
        assert ckpt.wait(120), "the second world's save was not replicated"


def save_worker(rank, world, session, total_bytes):
    import shoal.torch
    model, opt, nbytes = _model(world, total_bytes)
    ckpt = shoal.torch.Checkpointer(session, safe_timeout=0)
    ckpt.save(SAVE_STEP, _state(model, opt))
    assert ckpt.wait(120), "the first world's save was not replicated"
    print(json.dumps({"rank": rank, "system": "reshard_save", "state_bytes": nbytes}), flush=True)


def _parts(rows, runs, name):
    """Per direction, where the load's time went, from the ranks' PARTS (null where a build's load does not
    report them): the slowest rank's reads from its own host's memory and from peers (median over runs), the
    bytes of each summed over ranks, the peer fetches alone over the TCP baseline of the same run, and each
    new rank's own medians."""
    import statistics
    mine = [r for r in rows if r.get("system") == "reshard"]
    keys = ("local_bytes", "local_s", "remote_bytes", "remote_s", "remote_vs_tcp", "by_rank")
    out = {"reshard_%s_%s" % (name, k): None for k in keys}
    if not mine or any(r.get("local_s") is None or r.get("remote_s") is None for r in mine):
        return out
    per_run = {}
    for r in mine:
        slot = per_run.setdefault(r["run"], {"local": 0.0, "remote": 0.0, "local_bytes": 0, "remote_bytes": 0})
        slot["local"] = max(slot["local"], r["local_s"])
        slot["remote"] = max(slot["remote"], r["remote_s"])
        slot["local_bytes"] += r["local_bytes"]
        slot["remote_bytes"] += r["remote_bytes"]
    remote = statistics.median(v["remote"] for v in per_run.values())
    tcp = statistics.median(runs[k]["tcp"] for k in per_run)
    by_rank = []
    for rank in sorted({r["rank"] for r in mine}):
        own = [r for r in mine if r["rank"] == rank]
        by_rank.append({"rank": rank, "local_bytes": max(r["local_bytes"] for r in own),
                        "local_s": round(statistics.median(r["local_s"] for r in own), 4),
                        "remote_bytes": max(r["remote_bytes"] for r in own),
                        "remote_s": round(statistics.median(r["remote_s"] for r in own), 4),
                        "total_s": round(statistics.median(r["total_s"] for r in own), 4)})
    out.update({"reshard_%s_local_bytes" % name: max(v["local_bytes"] for v in per_run.values()),
                "reshard_%s_local_s" % name: round(statistics.median(v["local"] for v in per_run.values()), 4),
                "reshard_%s_remote_bytes" % name: max(v["remote_bytes"] for v in per_run.values()),
                "reshard_%s_remote_s" % name: round(remote, 4),
                "reshard_%s_remote_vs_tcp" % name: round(remote / tcp, 2) if tcp > 0 else None,
                "reshard_%s_by_rank" % name: by_rank})
    return out


def summary(rows_shrink, rows_grow, big, small):
    """The reshard_vs_tcp fields from the two load worlds' rows: per direction the median over runs of the
    slowest rank's load and baseline, the bytes crossed, the ratio; the field is the worse direction's. Beside
    them, by addition, each direction's split of the load (_parts)."""
    import statistics
    out = {}
    worst = None
    for name, rows in (("%dto%d" % (big, small), rows_shrink), ("%dto%d" % (small, big), rows_grow)):
        runs = {}
        for r in rows:
            if r.get("system") == "reshard":
                slot = runs.setdefault(r["run"], {"load": 0.0, "tcp": 0.0, "copy": 0.0, "crossed": 0,
                                                  "state": r["state_bytes"]})
                slot["load"] = max(slot["load"], r["load_s"])
                slot["tcp"] = max(slot["tcp"], r["tcp_s"])
                slot["copy"] = max(slot["copy"], r["copy_s"])
                slot["crossed"] += r["crossed_bytes"]
        if not runs:
            return None
        out.update(_parts(rows, runs, name))
        load = statistics.median(v["load"] for v in runs.values())
        tcp = statistics.median(v["tcp"] for v in runs.values())
        copy = statistics.median(v["copy"] for v in runs.values())
        ratio = load / tcp if tcp > 0 else None
        out.update({"reshard_%s_s" % name: round(load, 4), "reshard_%s_tcp_s" % name: round(tcp, 4),
                    "reshard_%s_copy_s" % name: round(copy, 4),
                    "reshard_%s_crossed_bytes" % name: max(v["crossed"] for v in runs.values()),
                    "reshard_%s_vs_tcp" % name: None if ratio is None else round(ratio, 2)})
        out["reshard_state_bytes"] = max(v["state"] for v in runs.values())
        if ratio is not None:
            worst = ratio if worst is None else max(worst, ratio)
    out["reshard_vs_tcp"] = None if worst is None else round(worst, 2)
    return out


if __name__ == "__main__":
    raise SystemExit("run by shard_bench.py")

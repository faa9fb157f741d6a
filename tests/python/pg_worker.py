"""One rank of the process-group tests (test_process_group.py): a process group over shoal (an embedded
session per rank, all on loopback), or torch's own gloo backend as the reference, and a task run on it.

    pg_worker.py TASK BACKEND RANK WORLD PORT0 JOB     (BACKEND: shoal | gloo; PORT0: rank r uses PORT0 + r)

Tasks: collectives (every operation the group serves, checked here, plus its refusals), ddp and fsdp2
(20 training steps from fixed seeds; prints the full parameters' values), failed_collectives (rank 0 aborts
its communicator under the others' synchronous broadcast; they report what the call did and then end by
that error, uncaught). Prints JSON lines."""
import datetime
import json
import os
import sys
import time
import zlib

import torch
import torch.distributed as dist


def emit(**doc):
    sys.stdout.write(json.dumps(doc) + "\n")
    sys.stdout.flush()


def setup(backend, rank, world, port0, job):
    if backend == "gloo":
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port0, rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=60))
        return None
    import shoal
    import shoal.torch
    seeds = [] if rank == 0 else ["127.0.0.1:%d" % port0]
    session = shoal.Session.start(insecure=True, name="h%d" % rank, host="h%d" % rank,
                                  bind="127.0.0.1:%d" % (port0 + rank), seeds=seeds, cluster=job, job=job,
                                  min_hosts=world, control_path="none", log_spec="warn")
    pg = shoal.torch.init_process_group(session)
    assert dist.get_rank() == rank and dist.get_world_size() == world, (dist.get_rank(), rank)
    emit(event="group", name=pg.group_name, backend=dist.get_backend())
    return session


def checks_collectives(rank, world):
    """Every operation the shoal group serves, with exact results."""
    out = {}
    # all_reduce: every op, the types Gloo reduces natively and the widened ones, a non-contiguous tensor.
    for op, name in ((dist.ReduceOp.SUM, "sum"), (dist.ReduceOp.MIN, "min"), (dist.ReduceOp.MAX, "max"),
                     (dist.ReduceOp.AVG, "avg")):
        for dtype in (torch.float32, torch.float64, torch.int32, torch.int64, torch.bfloat16, torch.float16,
                      torch.uint8):
            if op == dist.ReduceOp.AVG and not dtype.is_floating_point:
                continue
            t = torch.full((5,), rank + 1, dtype=dtype)
            dist.all_reduce(t, op=op)
            ranks = list(range(1, world + 1))
            want = {"sum": sum(ranks), "min": 1, "max": world, "avg": sum(ranks) / world}[name]
            out["all_reduce_%s_%s" % (name, str(dtype).split(".")[1])] = float(t[0]) == want
    grid = torch.arange(12, dtype=torch.float32).reshape(3, 4) * (rank + 1)
    view = grid.t()  # not contiguous
    dist.all_reduce(view)
    out["all_reduce_noncontiguous"] = torch.equal(grid, torch.arange(12, dtype=torch.float32).reshape(3, 4)
                                                  * sum(range(1, world + 1)))
    # async: a Work, waited for later; several in flight at once
    ts = [torch.full((1000,), float(rank + k)) for k in range(4)]
    works = [dist.all_reduce(t, async_op=True) for t in ts]
    for w in works:
        w.wait()
    out["all_reduce_async"] = all(float(t[0]) == sum(r + k for r in range(world)) for k, t in enumerate(ts))
    # broadcast from a non-zero root
    b = torch.full((3,), float(rank))
    dist.broadcast(b, src=world - 1)
    out["broadcast"] = float(b[2]) == world - 1
    # all_gather (list) and all_gather_into_tensor
    parts = [torch.zeros(2, dtype=torch.int64) for _ in range(world)]
    dist.all_gather(parts, torch.tensor([rank, rank * 10]))
    out["all_gather"] = [p.tolist() for p in parts] == [[r, r * 10] for r in range(world)]
    flat = torch.zeros(world * 2)
    dist.all_gather_into_tensor(flat, torch.tensor([float(rank), 0.5]))
    out["all_gather_into_tensor"] = flat.tolist() == sum(([float(r), 0.5] for r in range(world)), [])
    # reduce_scatter_tensor (SUM, AVG) and reduce_scatter (list)
    src = torch.arange(world * 3, dtype=torch.float32) + rank
    got = torch.zeros(3)
    dist.reduce_scatter_tensor(got, src)
    base = torch.arange(world * 3, dtype=torch.float32)[rank * 3:(rank + 1) * 3]
    out["reduce_scatter_tensor_sum"] = torch.equal(got, base * world + sum(range(world)))
    dist.reduce_scatter_tensor(got, src, op=dist.ReduceOp.AVG)
    out["reduce_scatter_tensor_avg"] = torch.allclose(got, base + sum(range(world)) / world)
    pieces = [torch.full((2,), float(rank * world + p)) for p in range(world)]
    mine = torch.zeros(2)
    dist.reduce_scatter(mine, pieces)
    out["reduce_scatter_list"] = float(mine[0]) == sum(r * world + rank for r in range(world))
    # all_to_all_single and all_to_all (list)
    a_in = torch.tensor([rank * 100 + p for p in range(world)], dtype=torch.int32)
    a_out = torch.zeros(world, dtype=torch.int32)
    dist.all_to_all_single(a_out, a_in)
    out["all_to_all_single"] = a_out.tolist() == [p * 100 + rank for p in range(world)]
    l_out = [torch.zeros(1) for _ in range(world)]
    dist.all_to_all(l_out, [torch.tensor([float(rank * 10 + p)]) for p in range(world)])
    out["all_to_all_list"] = [float(t[0]) for t in l_out] == [float(p * 10 + rank) for p in range(world)]
    # gather and scatter at root 1
    g = [torch.zeros(1) for _ in range(world)] if rank == 1 else None
    dist.gather(torch.tensor([float(rank)]), gather_list=g, dst=1)
    out["gather"] = rank != 1 or [float(t[0]) for t in g] == [float(r) for r in range(world)]
    s = torch.zeros(2)
    dist.scatter(s, [torch.tensor([float(r), -1.0]) for r in range(world)] if rank == 1 else None, src=1)
    out["scatter"] = s.tolist() == [float(rank), -1.0]
    # send/recv: a ring in which everyone sends before it receives (batch_isend_irecv)
    nxt, prv = (rank + 1) % world, (rank - 1) % world
    recvd = torch.zeros(4)
    reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, torch.full((4,), float(rank)), nxt),
                                   dist.P2POp(dist.irecv, recvd, prv)])
    for r in reqs:
        r.wait()
    out["send_recv_ring"] = float(recvd[0]) == prv
    dist.barrier()
    out["barrier"] = True
    return out


def checks_refusals(rank):
    """What the group refuses says what to do, and raises at once."""
    import shoal.torch
    out = {}
    try:
        dist.all_reduce(torch.zeros(2, dtype=torch.bool))
        out["bool_refused"] = ""
    except RuntimeError as e:
        out["bool_refused"] = str(e)
    try:
        shoal.torch.init_process_group()
        out["second_init"] = ""
    except RuntimeError as e:
        out["second_init"] = str(e)
    premul = getattr(dist, "_make_nccl_premul_sum", None)
    if premul is not None:
        try:
            dist.reduce_scatter_tensor(torch.zeros(1), torch.zeros(dist.get_world_size()), op=premul(0.5))
            out["premul_sum"] = ""
        except RuntimeError as e:
            out["premul_sum"] = str(e)
    return out


def train_ddp(rank, world):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
    model = torch.nn.parallel.DistributedDataParallel(net, bucket_cap_mb=0.01)  # several buckets
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(20):
        g = torch.Generator().manual_seed(1000 * step + rank)
        x, y = torch.randn(8, 16, generator=g), torch.randn(8, 4, generator=g)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return [p.detach().reshape(-1).tolist() for p in net.parameters()]


def train_fsdp2(rank, world):
    try:
        from torch.distributed.fsdp import fully_shard
    except ImportError:
        from torch.distributed._composable.fsdp import fully_shard
    from torch.distributed.device_mesh import init_device_mesh
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64), torch.nn.ReLU(),
                                torch.nn.Linear(64, 4))
    mesh = init_device_mesh("cpu", (world,))
    for layer in (model[0], model[2], model[4]):
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for step in range(20):
        g = torch.Generator().manual_seed(1000 * step + rank)
        x, y = torch.randn(8, 16, generator=g), torch.randn(8, 4, generator=g)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return [p.full_tensor().detach().reshape(-1).tolist() for p in model.parameters()]


def fsdp2_checkpoint(session, rank, world):
    """FSDP2 state (DTensors: parameters and AdamW's moments) saved with Checkpointer as this rank's shards,
    trained on, then loaded back in place: the full parameters are those of the saved step again."""
    import shoal.torch
    try:
        from torch.distributed.fsdp import fully_shard
    except ImportError:
        from torch.distributed._composable.fsdp import fully_shard
    from torch.distributed.device_mesh import init_device_mesh
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 30), torch.nn.ReLU(), torch.nn.Linear(30, 4))
    mesh = init_device_mesh("cpu", (world,))
    for layer in (model[0], model[2]):
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)

    def train(steps, first):
        for step in range(first, first + steps):
            g = torch.Generator().manual_seed(1000 * step + rank)
            loss = torch.nn.functional.mse_loss(model(torch.randn(8, 16, generator=g)), torch.randn(8, 4, generator=g))
            opt.zero_grad()
            loss.backward()
            opt.step()

    ckpt = shoal.torch.Checkpointer(session, safe_timeout=30)
    train(5, 0)
    ckpt.save(4, {"model": model.state_dict(), "optim": opt.state_dict()})
    saved = [p.full_tensor().clone() for p in model.parameters()]
    train(3, 5)
    moved = any(not torch.equal(a, p.full_tensor()) for a, p in zip(saved, model.parameters()))
    step, state = ckpt.load(into={"model": model.state_dict(), "optim": opt.state_dict()})
    back = all(torch.equal(a, p.full_tensor()) for a, p in zip(saved, model.parameters()))
    kept_dtensors = all(type(v).__name__ == "DTensor" for v in state["model"].values())
    ckpt.wait(30)
    ckpt.close()
    return {"step": step, "moved": moved, "back": back, "dtensors": kept_dtensors}


def _fsdp2_model_and_adamw(world, out_features=4, lr=1e-2):
    try:
        from torch.distributed.fsdp import fully_shard
    except ImportError:
        from torch.distributed._composable.fsdp import fully_shard
    from torch.distributed.device_mesh import init_device_mesh
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 30), torch.nn.ReLU(), torch.nn.Linear(30, out_features))
    mesh = init_device_mesh("cpu", (world,))
    for layer in (model[0], model[2]):
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model, torch.optim.AdamW(model.parameters(), lr=lr)


def _train(model, opt, rank, steps, first=0):
    for step in range(first, first + steps):
        g = torch.Generator().manual_seed(1000 * step + rank)
        out = model(torch.randn(8, 16, generator=g))
        loss = torch.nn.functional.mse_loss(out, torch.randn(out.shape, generator=g))
        opt.zero_grad()
        loss.backward()
        opt.step()


def _full_digest(model, opt):
    """sha256 of the full (gathered) parameters and AdamW moments, and the steps: equal across worlds."""
    import hashlib
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.full_tensor().detach().numpy().tobytes())
        st = opt.state[p]
        for k in ("exp_avg", "exp_avg_sq"):
            h.update(st[k].full_tensor().numpy().tobytes())
        h.update(repr(float(st["step"])).encode())
    return h.hexdigest()


def reshard_save(session, rank, world):
    """FSDP2 at `world` ranks trains 3 steps and saves step 2; the process then ends without leaving (as a
    crash would), so its host's memory keeps its slot and its replicas for the next world."""
    import shoal.torch
    model, opt = _fsdp2_model_and_adamw(world)
    _train(model, opt, rank, 3)
    ckpt = shoal.torch.Checkpointer(session, safe_timeout=0)
    ckpt.save(2, {"model": model.state_dict(), "optim": opt.state_dict(), "note": "w%d" % world})
    assert ckpt.wait(30), "step 2 was not replicated"
    return {"digest": _full_digest(model, opt)}


def reshard_load(session, rank, world, then_save=False):
    """A fresh FSDP2 model and AdamW (one step at lr=0 gives it its state tensors) at `world` ranks: a model
    of another shape is refused with nothing written, then the saved state loads resharded. then_save: the
    loaded state is saved again as step 5 of this world (ended without leaving, as reshard_save)."""
    import shoal.torch
    ckpt = shoal.torch.Checkpointer(session, safe_timeout=0)
    bad, bad_opt = _fsdp2_model_and_adamw(world, out_features=5, lr=0.0)
    _train(bad, bad_opt, rank, 1)
    before = [p.full_tensor().clone() for p in bad.parameters()]
    refused = ""
    try:
        ckpt.load(into={"model": bad.state_dict(), "optim": bad_opt.state_dict()})
    except ValueError as e:
        refused = str(e)
    untouched = all(torch.equal(a, p.full_tensor()) for a, p in zip(before, bad.parameters()))
    model, opt = _fsdp2_model_and_adamw(world, lr=0.0)
    _train(model, opt, rank, 1)
    step, state = ckpt.load(into={"model": model.state_dict(), "optim": opt.state_dict()})
    dtensors = all(type(v).__name__ == "DTensor" for v in state["model"].values())
    if then_save:
        ckpt.save(5, {"model": model.state_dict(), "optim": opt.state_dict(), "note": "w%d" % world})
        assert ckpt.wait(30), "step 5 was not replicated"
    return {"step": step, "digest": _full_digest(model, opt), "note": state["note"], "refused": refused,
            "untouched": untouched, "dtensors": dtensors, "stats": ckpt.last_reshard}


def two_steps_save(session, rank, world):
    """FSDP2 at `world` ranks saves step 2 (after 3 training steps) and step 3 (one more); both replicated. The
    first 64 bytes of this rank's shard of the first layer's weight at step 3 let a test find its copies in
    /dev/shm. Ends without leaving, as reshard_save."""
    import shoal.torch
    model, opt = _fsdp2_model_and_adamw(world)
    _train(model, opt, rank, 3)
    ckpt = shoal.torch.Checkpointer(session, safe_timeout=0)
    ckpt.save(2, {"model": model.state_dict(), "optim": opt.state_dict(), "note": "w%d" % world})
    digest2 = _full_digest(model, opt)
    _train(model, opt, rank, 1, first=3)
    ckpt.save(3, {"model": model.state_dict(), "optim": opt.state_dict(), "note": "w%d" % world})
    assert ckpt.wait(30), "step 3 was not replicated"
    needle = model.state_dict()["0.weight"].to_local().numpy().tobytes()[:64].hex()
    return {"digest2": digest2, "digest3": _full_digest(model, opt), "needle": needle}


def load_past_corruption(session, rank, world):
    """Loads resharded into a fresh FSDP2 model at `world` ranks; reports the step, the digest and whether this
    rank was told that the newest step could not be loaded and every rank went on to an older one."""
    import logging
    import shoal.torch
    heard = []

    class Heard(logging.Handler):
        def emit(self, record):
            heard.append(record.getMessage())

    logging.getLogger("shoal.torch").addHandler(Heard())
    model, opt = _fsdp2_model_and_adamw(world, lr=0.0)
    _train(model, opt, rank, 1)
    step, _ = shoal.torch.Checkpointer(session, safe_timeout=0).load(
        into={"model": model.state_dict(), "optim": opt.state_dict()})
    return {"step": step, "digest": _full_digest(model, opt),
            "fell_back": any("every rank goes on from step 3 to step 2" in m for m in heard),
            "corrupt": [m for m in heard if "cannot be loaded" in m]}


def failed_collectives(rank, world):
    """Rank 0 aborts its communicator while the others wait in a synchronous broadcast from it. Returns
    (what this rank saw, the error to end by)."""
    import shoal
    dist.barrier()
    group = dist.distributed_c10d._get_default_group()
    if rank == 0:
        time.sleep(0.3)
        group.comm.abort("the test aborts rank 0's communicator")
        return {}, None
    seen, error = {}, None
    t = torch.full((4,), 7.0)
    try:
        dist.broadcast(t, src=0)
        seen["broadcast"] = "returned"
    except shoal.ViewChanged as e:
        seen["broadcast"], error = "ViewChanged", e
    seen["broadcast_tensor_kept"] = t.tolist() == [7.0] * 4
    for name, call in (("all_reduce", lambda: dist.all_reduce(t)),
                       ("all_reduce_async", lambda: dist.all_reduce(t, async_op=True).wait())):
        try:
            call()
            seen[name] = "returned"
        except shoal.ViewChanged:
            seen[name] = "ViewChanged"
    seen["tensor_kept"] = t.tolist() == [7.0] * 4
    return seen, error


def run_task(task, session, rank, world):
    if task == "collectives":
        emit(event="checks", rank=rank, results=checks_collectives(rank, world), refusals=checks_refusals(rank))
    elif task == "failed_collectives":
        seen, error = failed_collectives(rank, world)
        emit(event="failed_collectives", rank=rank, **seen)
        if error is not None:
            raise error  # ends the process as a program would, with the collective's failure in flight
        return False
    elif task == "fsdp2_ckpt":
        emit(event="fsdp2_ckpt", rank=rank, **fsdp2_checkpoint(session, rank, world))
    elif task == "reshard_save":
        emit(event="reshard_save", rank=rank, **reshard_save(session, rank, world))
        dist.barrier()
        os._exit(0)  # no leave: this host's memory stays for the next world
    elif task == "reshard_load":
        emit(event="reshard_load", rank=rank, **reshard_load(session, rank, world))
    elif task == "reshard_load_save":
        emit(event="reshard_load", rank=rank, **reshard_load(session, rank, world, then_save=True))
        dist.barrier()
        os._exit(0)
    elif task == "two_steps_save":
        emit(event="two_steps_save", rank=rank, **two_steps_save(session, rank, world))
        dist.barrier()
        os._exit(0)
    elif task == "load_past_corruption":
        emit(event="load_past_corruption", rank=rank, **load_past_corruption(session, rank, world))
    elif task in ("ddp", "fsdp2"):
        params = train_ddp(rank, world) if task == "ddp" else train_fsdp2(rank, world)
        crc = zlib.crc32(json.dumps(params).encode())
        emit(event="params", task=task, rank=rank, params=params if rank == 0 else None, crc=crc)
    else:
        raise SystemExit("pg_worker: unknown task %r" % task)
    dist.barrier()
    return True


def main():
    """TASKS (one, or several joined by '+', run in order on one process group) BACKEND RANK WORLD PORT0 JOB"""
    tasks, backend, rank, world, port0, job = sys.argv[1].split("+"), sys.argv[2], int(sys.argv[3]), \
        int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
    torch.set_num_threads(1)
    session = setup(backend, rank, world, port0, job)
    for task in tasks:
        if not run_task(task, session, rank, world):
            break  # the group is gone
    dist.destroy_process_group()
    if session is not None:
        session.leave()


if __name__ == "__main__":
    main()

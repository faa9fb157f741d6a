"""One rank of the DCP storage tests (test_dcp.py): an FSDP2 (fully_shard) model with AdamW over the shoal
process group (an embedded session per rank, on loopback), saved with dcp.save into shoal's memory
(ShoalStorageWriter) and loaded with dcp.load (ShoalStorageReader).

    dcp_worker.py TASK RANK WORLD PORT0 JOB [HOSTS]     (HOSTS: the ranks' host names, h0,h1,... by default)

Tasks:
- same: train 3 steps, save step 3, train 2 more (the reference); a fresh model of other values loads step 3
  and trains the same 2 steps: its parameters and optimizer state must equal the reference bit for bit.
- save: train 3 steps, save step 3, print the full parameters and wait until the save is replicated.
- load: (another world, same job and host names) a fresh model loads the newest step; prints the full
  parameters, or the error.
Prints JSON lines."""
import os
import sys
import traceback

import torch
import torch.distributed as dist

from pg_worker import emit


def setup(rank, world, port0, job, host):
    """An embedded agent named `host` on loopback port PORT0 + rank, and the shoal process group."""
    import shoal
    import shoal.torch
    seeds = [] if rank == 0 else ["127.0.0.1:%d" % port0]
    session = shoal.Session.start(insecure=True, name=host, host=host, bind="127.0.0.1:%d" % (port0 + rank),
                                  seeds=seeds, cluster=job, job=job, min_hosts=world, control_path="none",
                                  log_spec="warn")
    shoal.torch.init_process_group(session)
    assert dist.get_rank() == rank and dist.get_world_size() == world, (dist.get_rank(), rank)
    return session


def build(world, seed):
    try:
        from torch.distributed.fsdp import fully_shard
    except ImportError:
        from torch.distributed._composable.fsdp import fully_shard
    from torch.distributed.device_mesh import init_device_mesh
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(16, 30), torch.nn.ReLU(), torch.nn.Linear(30, 4))
    mesh = init_device_mesh("cpu", (world,))
    for layer in (model[0], model[2]):
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model, torch.optim.AdamW(model.parameters(), lr=1e-2)


def train(model, opt, first, steps):
    for step in range(first, first + steps):
        g = torch.Generator().manual_seed(1000 * step)
        x, y = torch.randn(8, 16, generator=g), torch.randn(8, 4, generator=g)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()


def state_of(model, opt, epoch):
    from torch.distributed.checkpoint.state_dict import get_state_dict
    model_sd, optim_sd = get_state_dict(model, opt)
    return {"model": model_sd, "optim": optim_sd, "progress": {"epoch": epoch, "name": "run-a"}}


def restore(model, opt, state):
    from torch.distributed.checkpoint.state_dict import set_state_dict
    set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])


def full(model):
    return [p.full_tensor().detach().clone() for p in model.parameters()]


def optim_full(model, opt):
    from torch.distributed.checkpoint.state_dict import get_optimizer_state_dict
    out = {}
    for key, per in get_optimizer_state_dict(model, opt)["state"].items():
        for name, v in per.items():
            out["%s.%s" % (key, name)] = v.full_tensor() if hasattr(v, "full_tensor") else v
    return out


def same_world(session, rank, world):
    import torch.distributed.checkpoint as dcp
    from shoal.torch.dcp import ShoalStorageReader, ShoalStorageWriter
    model, opt = build(world, 0)
    train(model, opt, 0, 3)
    dcp.save(state_of(model, opt, 7), storage_writer=ShoalStorageWriter(session, step=3))
    train(model, opt, 3, 2)
    reference, reference_optim = full(model), optim_full(model, opt)

    fresh, fresh_opt = build(world, 1)
    train(fresh, fresh_opt, 50, 1)  # other values, and optimizer state to overwrite
    before = full(fresh)
    state = state_of(fresh, fresh_opt, 0)
    reader = ShoalStorageReader(session)
    dcp.load(state, storage_reader=reader)
    restore(fresh, fresh_opt, state)
    moved = any(not torch.equal(a, b) for a, b in zip(before, full(fresh)))
    train(fresh, fresh_opt, 3, 2)
    got_optim = optim_full(fresh, fresh_opt)
    return {"step": reader.loaded_step, "source": reader.source, "moved": moved,
            "params_equal": all(torch.equal(a, b) for a, b in zip(reference, full(fresh))),
            "optim_equal": sorted(got_optim) == sorted(reference_optim)
            and all(torch.equal(got_optim[k], reference_optim[k]) for k in reference_optim),
            "progress": state["progress"]}


def save(session, rank, world):
    import torch.distributed.checkpoint as dcp
    from shoal.torch.dcp import ShoalStorageWriter
    model, opt = build(world, 0)
    train(model, opt, 0, 3)
    dcp.save(state_of(model, opt, 7), storage_writer=ShoalStorageWriter(session, step=3))
    safe = session.wait_checkpoint_safe(3, 30.0)
    return {"params": [p.reshape(-1).tolist() for p in full(model)], "safe": safe}


def load(session, rank, world):
    import torch.distributed.checkpoint as dcp
    from shoal.torch.dcp import ShoalStorageReader
    model, opt = build(world, 1)
    before = full(model)
    state = state_of(model, opt, 0)
    reader = ShoalStorageReader(session)
    try:
        dcp.load(state, storage_reader=reader)
    except BaseException as e:  # noqa: BLE001 (DCP raises CheckpointException, a BaseException; the test reads it)
        return {"error": "%s: %s" % (type(e).__name__, e),
                "untouched": all(torch.equal(a, b) for a, b in zip(before, full(model)))}
    restore(model, opt, state)
    return {"params": [p.reshape(-1).tolist() for p in full(model)], "step": reader.loaded_step,
            "progress": state["progress"]}


def main():
    task, rank, world, port0, job = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    hosts = sys.argv[6].split(",") if len(sys.argv) > 6 else ["h%d" % r for r in range(world)]
    torch.set_num_threads(1)
    session = setup(rank, world, port0, job, hosts[rank])
    try:
        result = {"same": same_world, "save": save, "load": load}[task](session, rank, world)
    except Exception:  # noqa: BLE001
        result = {"crash": traceback.format_exc()[-4000:]}
    emit(event=task, rank=rank, **result)
    dist.barrier()
    if task == "save":
        # Gone as a killed host is: its versions stay in /dev/shm (a graceful leave removes them) for the next
        # world of the same job and host names to load.
        os._exit(0)
    dist.destroy_process_group()
    session.leave()


if __name__ == "__main__":
    main()

"""The Python package's GPU path on one GPU (a world of one: NCCL refuses two ranks on one device). Run by
scripts/gpu-check.sh on a machine with a GPU; exits 77 (skip) without one.

Checks, each printed as a JSON line with its figures:
- every collective of the `shoal` process group on CUDA tensors over NCCL: outputs on the input's device;
- stream order: a collective issued on a side stream right after a long kernel that writes its input sees
  what the kernel wrote (the communicator's stream waits for an event on the caller's stream);
- DDP over the `shoal` group on NCCL trains exactly as the same model without DDP (a world of one), with
  several buckets in flight during the backward pass;
- Checkpointer saves CUDA state and loads it back into CUDA tensors bit for bit; the save's time against a
  plain device-to-host copy of the same bytes (torch's .to('cpu', non_blocking=False) into pinned memory)."""
import json
import os
import sys
import time

import torch
import torch.distributed as dist


def emit(**doc):
    sys.stdout.write(json.dumps(doc) + "\n")
    sys.stdout.flush()


def check(name, ok, **figures):
    emit(check=name, ok=bool(ok), **figures)
    return bool(ok)


def collectives(dev):
    ok = True
    t = torch.arange(6, dtype=torch.float32, device=dev)
    dist.all_reduce(t)
    ok &= check("all_reduce", t.device == dev and t.tolist() == list(range(6)))
    h = torch.ones(4, dtype=torch.bfloat16, device=dev)
    dist.all_reduce(h)
    ok &= check("all_reduce_bf16", h.dtype == torch.bfloat16 and float(h[0]) == 1.0)
    b = torch.full((3,), 5.0, device=dev)
    dist.broadcast(b, src=0)
    ok &= check("broadcast", float(b[0]) == 5.0)
    parts = [torch.zeros(2, device=dev)]
    dist.all_gather(parts, torch.tensor([1.0, 2.0], device=dev))
    ok &= check("all_gather", parts[0].device == dev and parts[0].tolist() == [1.0, 2.0])
    out = torch.zeros(2, device=dev)
    dist.all_gather_into_tensor(out, torch.tensor([3.0, 4.0], device=dev))
    ok &= check("all_gather_into_tensor", out.tolist() == [3.0, 4.0])
    rs = torch.zeros(3, device=dev)
    dist.reduce_scatter_tensor(rs, torch.tensor([1.0, 2.0, 3.0], device=dev))
    ok &= check("reduce_scatter_tensor", rs.tolist() == [1.0, 2.0, 3.0])
    a = torch.zeros(4, dtype=torch.int32, device=dev)
    dist.all_to_all_single(a, torch.arange(4, dtype=torch.int32, device=dev))
    ok &= check("all_to_all_single", a.tolist() == [0, 1, 2, 3])
    g = [torch.zeros(1, device=dev)]
    dist.gather(torch.tensor([9.0], device=dev), gather_list=g, dst=0)
    ok &= check("gather", float(g[0][0]) == 9.0)
    s = torch.zeros(1, device=dev)
    dist.scatter(s, [torch.tensor([8.0], device=dev)], src=0)
    ok &= check("scatter", float(s[0]) == 8.0)
    dist.barrier()
    return ok


def stream_order(dev):
    """The all-reduce is issued on a side stream right after kernels that take a while and then write its
    input; without the event it would read the old value."""
    side = torch.cuda.Stream(dev)
    x = torch.randn(4096, 4096, device=dev)
    t = torch.zeros(1 << 20, device=dev)
    torch.cuda.synchronize(dev)
    with torch.cuda.stream(side):
        for _ in range(8):
            x = x @ x
            x = x / x.norm()
        t.fill_(7.0)
        work = dist.all_reduce(t, async_op=True)
    work.wait()
    torch.cuda.synchronize(dev)
    return check("stream_order", float(t[-1]) == 7.0 and float(t[0]) == 7.0)


def ddp(dev):
    torch.manual_seed(0)
    make = lambda: torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 2048),
                                       torch.nn.ReLU(), torch.nn.Linear(2048, 16)).to(dev)
    plain = make()
    torch.manual_seed(0)
    wrapped_net = make()
    model = torch.nn.parallel.DistributedDataParallel(wrapped_net, device_ids=[dev.index], bucket_cap_mb=2)
    opt_a = torch.optim.SGD(plain.parameters(), lr=1e-2)
    opt_b = torch.optim.SGD(model.parameters(), lr=1e-2)
    times = []
    for step in range(20):
        gen = torch.Generator(device=dev).manual_seed(step)
        xb, yb = torch.randn(64, 512, device=dev, generator=gen), torch.randn(64, 16, device=dev, generator=gen)
        for m, opt in ((plain, opt_a), (model, opt_b)):
            torch.cuda.synchronize(dev)
            began = time.perf_counter()
            loss = torch.nn.functional.mse_loss(m(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            torch.cuda.synchronize(dev)
            if m is model and step >= 5:
                times.append(time.perf_counter() - began)
    same = all(torch.equal(p, q) for p, q in zip(plain.parameters(), wrapped_net.parameters()))
    diff = max(float((p - q).abs().max()) for p, q in zip(plain.parameters(), wrapped_net.parameters()))
    return check("ddp_nccl_world1", diff < 1e-5, bit_exact=same, max_difference=diff,
                 step_ms_median=round(sorted(times)[len(times) // 2] * 1000.0, 3))


def checkpointer(session, dev):
    import shoal.torch
    ckpt = shoal.torch.Checkpointer(session)
    n = (256 << 20) // 4
    state = {"w": torch.randn(n, device=dev), "b": torch.arange(1000, device=dev, dtype=torch.int64), "step": 3}
    ckpt.prepare(state)
    saves = []
    for step in range(5):
        state["w"][0] = float(step)
        torch.cuda.synchronize(dev)
        began = time.perf_counter()
        ckpt.save(step, state)
        saves.append(time.perf_counter() - began)
    pinned = torch.empty(n, dtype=torch.float32, pin_memory=True)
    copies = []
    for _ in range(5):
        torch.cuda.synchronize(dev)
        began = time.perf_counter()
        pinned.copy_(state["w"])
        torch.cuda.synchronize(dev)
        copies.append(time.perf_counter() - began)
    expect = {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in state.items()}
    into = {"w": torch.zeros_like(state["w"]), "b": torch.zeros_like(state["b"]), "step": 0}
    step, loaded = ckpt.load(into=into)
    exact = step == 4 and loaded["w"].device == dev and torch.equal(loaded["w"], expect["w"]) \
        and torch.equal(loaded["b"], expect["b"]) and loaded["w"].data_ptr() == into["w"].data_ptr()
    save_s, copy_s = sorted(saves)[2], sorted(copies)[2]
    ckpt.close()
    return check("checkpointer_cuda", exact, loaded_step=step, bytes=n * 4, save_s=round(save_s, 6),
                 d2h_pinned_copy_s=round(copy_s, 6), save_vs_d2h=round(save_s / copy_s, 3),
                 load_source=ckpt.last_load.source if ckpt.last_load else None)


def main():
    if not torch.cuda.is_available():
        print("no GPU: skipped")
        sys.exit(77)
    import shoal
    import shoal.torch
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    job = "gpuck%d" % os.getpid()
    session = shoal.Session.start(insecure=True, name="g0", bind="127.0.0.1:0", control_path="none", cluster=job,
                                  job=job, backend="nccl", cuda_device=0, log_spec="warn")
    shoal.torch.init_process_group(session)
    emit(torch=torch.__version__, device=torch.cuda.get_device_name(dev), backend=session.communicator().backend)
    ok = collectives(dev)
    ok &= stream_order(dev)
    ok &= ddp(dev)
    ok &= checkpointer(session, dev)
    dist.destroy_process_group()
    session.leave()
    emit(summary="python gpu check", ok=bool(ok))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

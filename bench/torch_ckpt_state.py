"""The state torch_ckpt_bench.py saves: a mixed-precision transformer's checkpoint of a given size
(make_state), and its tensors' bytes (tensors_of, nbytes_of, bytes_view).
"""
import ctypes

import torch


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

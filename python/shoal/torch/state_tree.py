"""A training state as a skeleton plus raw storages: what Checkpointer saves and loads.

A state is a nest of dicts, lists and tuples whose leaves are tensors or plain picklable values (a
model's and an optimizer's state_dict(), a data loader's position, random generator states). Flattening
replaces every tensor by a TensorRef and collects the distinct storages the tensors live in: their
bytes are what a checkpoint copies, once, with no pickling. The skeleton (structure, small values and
each tensor's dtype, shape, strides and offset) is pickled beside them. Tensors that share a storage
(views, tied weights) share it again after a load, as with torch.save.
"""
import copy
import pickle
from typing import Any, Dict, List, Optional, Tuple

import torch

from . import safe_pickle
from ._compat import storage_of

FORMAT = 1


class TensorRef:
    """Where a tensor stood in the state: an index into the skeleton's tensor records."""

    __slots__ = ("index",)

    def __init__(self, index: int):
        self.index = index

    def __reduce__(self):
        return (TensorRef, (self.index,))


class TensorRecord:
    """How to rebuild one tensor from its storage. For this rank's shard of a distributed tensor (a DTensor:
    FSDP2, tensor parallelism) the storage holds the local shard, and `shard` is what DCP records beside it:
    (global shape, this shard's offsets in it); the shard's lengths are `shape`. None for a plain tensor."""

    __slots__ = ("storage", "dtype", "shape", "stride", "offset", "requires_grad", "parameter", "path", "shard")

    def __init__(self, storage, dtype, shape, stride, offset, requires_grad, parameter, path, shard=None):
        self.storage = storage  # index into the storages
        self.dtype = dtype  # e.g. "float32", "bfloat16"
        self.shape = shape
        self.stride = stride
        self.offset = offset  # in elements, from the storage's start
        self.requires_grad = requires_grad
        self.parameter = parameter  # a torch.nn.Parameter
        self.path = path  # the key path, for messages
        self.shard = shard

    def __reduce__(self):
        args = (self.storage, self.dtype, self.shape, self.stride, self.offset, self.requires_grad, self.parameter,
                self.path)
        return (TensorRecord, args + ((self.shard,) if self.shard is not None else ()))


class StorageRecord:
    """One distinct storage: its size and where it lived when saved."""

    __slots__ = ("nbytes", "device")

    def __init__(self, nbytes: int, device: str):
        self.nbytes = nbytes
        self.device = device

    def __reduce__(self):
        return (StorageRecord, (self.nbytes, self.device))


def path_text(path: Tuple) -> str:
    return "state" + "".join("[%r]" % (k,) for k in path)


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


_ITEMSIZE: Dict[str, int] = {}


def itemsize(name: str) -> int:
    """Bytes per element of the dtype called `name`."""
    size = _ITEMSIZE.get(name)
    if size is None:
        size = _ITEMSIZE[name] = torch.empty(0, dtype=dtype_of(name)).element_size()
    return size


def dtype_of(name: str) -> torch.dtype:
    d = getattr(torch, name, None)
    if not isinstance(d, torch.dtype):
        raise ValueError("the checkpoint names an unknown dtype %r" % name)
    return d


class Flat:
    """A flattened state: the pickled skeleton and the live tensors whose storages hold the bytes."""

    def __init__(self):
        self.records: List[TensorRecord] = []
        self.storages: List[StorageRecord] = []
        self.storage_tensors: List[torch.Tensor] = []  # one tensor on each storage, to reach its bytes
        self.skeleton: bytes = b""
        self._by_storage: Dict[Tuple, int] = {}

    def storage_address(self, i: int) -> int:
        return storage_of(self.storage_tensors[i]).data_ptr()

    def add_tensor(self, t: torch.Tensor, path: Tuple) -> TensorRef:
        shard = None
        if is_distributed(t):
            t, shard = local_shard(t)
        if t.layout != torch.strided:
            raise TypeError("%s: a %s tensor cannot be checkpointed (only dense, strided tensors)"
                            % (path_text(path), t.layout))
        if t.is_quantized:
            raise TypeError("%s: quantized tensors cannot be checkpointed" % path_text(path))
        if t.device.type not in ("cpu", "cuda"):
            raise TypeError("%s: tensors on %s cannot be checkpointed" % (path_text(path), t.device))
        storage = storage_of(t)
        key = (str(t.device), storage.data_ptr(), storage.nbytes())
        index = self._by_storage.get(key)
        if index is None:
            index = len(self.storages)
            self._by_storage[key] = index
            self.storages.append(StorageRecord(storage.nbytes(), t.device.type))
            self.storage_tensors.append(t)
        self.records.append(TensorRecord(index, dtype_name(t.dtype), tuple(t.shape), tuple(t.stride()),
                                         t.storage_offset(), bool(t.requires_grad),
                                         isinstance(t, torch.nn.Parameter), path, shard))
        return TensorRef(len(self.records) - 1)


def is_distributed(t) -> bool:
    """Whether `t` is a DTensor (FSDP2's parameters and their optimizer state are)."""
    return hasattr(t, "to_local") and hasattr(t, "device_mesh") and hasattr(t, "placements")


def local_shard(t):
    """(this rank's local tensor, (global shape, its offsets in the global shape)) of a DTensor."""
    from torch.distributed.tensor._utils import compute_local_shape_and_global_offset
    local = t.to_local()
    _, offsets = compute_local_shape_and_global_offset(t.shape, t.device_mesh, t.placements)
    return local, (tuple(int(n) for n in t.shape), tuple(int(o) for o in offsets))


def _rebuild_mapping(obj, items):
    if type(obj) is dict:
        return dict(items)
    out = copy.copy(obj)  # keeps the subclass and its extras (OrderedDict, defaultdict's factory)
    out.clear()
    out.update(items)
    return out


def _rebuild_sequence(obj, items):
    if type(obj) in (list, tuple):
        return type(obj)(items)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # a namedtuple
        return type(obj)(*items)
    return type(obj)(items)


def _replace(obj, path: Tuple, on_tensor):
    """A copy of the nest with every tensor replaced by on_tensor(tensor, path)."""
    if isinstance(obj, torch.Tensor):
        return on_tensor(obj, path)
    if isinstance(obj, dict):
        return _rebuild_mapping(obj, [(k, _replace(v, path + (k,), on_tensor)) for k, v in obj.items()])
    if isinstance(obj, (list, tuple)):
        return _rebuild_sequence(obj, [_replace(v, path + (i,), on_tensor) for i, v in enumerate(obj)])
    return obj


def _first_unpicklable(obj, path: Tuple) -> Optional[Tuple[Tuple, BaseException]]:
    if isinstance(obj, torch.Tensor):
        return None
    if isinstance(obj, (dict, list, tuple)) and type(obj) not in (dict, list, tuple):
        try:
            pickle.dumps(type(obj), protocol=pickle.HIGHEST_PROTOCOL)  # a container class saved by reference
        except Exception as e:  # noqa: BLE001
            return path, e
    if isinstance(obj, dict):
        items = list(obj.items())
    elif isinstance(obj, (list, tuple)):
        items = list(enumerate(obj))
    else:
        try:
            pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
            return None
        except Exception as e:  # noqa: BLE001 (any failure to pickle is the answer)
            return path, e
    for k, v in items:
        found = _first_unpicklable(v, path + (k,))
        if found:
            return found
    return None


def _first_not_admitted(obj, path: Tuple):
    """(key path, NotAdmitted, value) of the first value of the nest that safe_pickle would refuse, or None."""
    if isinstance(obj, torch.Tensor):
        return None
    if isinstance(obj, (dict, list, tuple)):
        if type(obj) not in (dict, list, tuple):
            try:
                safe_pickle.dumps(type(obj))
            except safe_pickle.NotAdmitted as e:
                return path, e, obj
        for k, v in (obj.items() if isinstance(obj, dict) else enumerate(obj)):
            found = _first_not_admitted(v, path + (k,))
            if found:
                return found
        return None
    try:
        safe_pickle.dumps(obj)
    except safe_pickle.NotAdmitted as e:
        return path, e, obj
    except Exception:  # noqa: BLE001 (not picklable at all: flatten says so with its own message)
        return None
    return None


def flatten(state: Any) -> Flat:
    """The skeleton and storages of `state`; TypeError naming the key path of anything that is neither a
    tensor nor picklable."""
    flat = Flat()
    tree = _replace(state, (), flat.add_tensor)
    try:
        flat.skeleton = safe_pickle.dumps((FORMAT, tree, flat.records, flat.storages))
    except safe_pickle.NotAdmitted as e:
        found = _first_not_admitted(state, ())
        if found is None:
            raise
        path, err, value = found
        raise safe_pickle.NotAdmitted("%s (a %s): %s" % (path_text(path), type(value).__name__, err)) from e
    except TypeError as e:
        found = _first_unpicklable(state, ())
        if found is None:
            raise TypeError("the state cannot be pickled: %s" % e) from e
        path, err = found
        raise TypeError("%s: %s is neither a tensor nor picklable (%s)"
                        % (path_text(path), type(_at(state, path)).__name__, err)) from err
    except Exception as e:  # noqa: BLE001
        found = _first_unpicklable(state, ())
        if found is None:
            raise TypeError("the state cannot be pickled: %s" % e) from e
        path, err = found
        raise TypeError("%s: %s is neither a tensor nor picklable (%s)"
                        % (path_text(path), type(_at(state, path)).__name__, err)) from err
    return flat


def _at(obj, path: Tuple):
    for k in path:
        obj = obj[k]
    return obj


class SkeletonRefused(ValueError):
    """A skeleton that does not parse, names a global safe_pickle does not admit, or holds malformed records:
    its bytes are not to be trusted (a copy of a checkpoint refused; state handed over refused)."""


def load_skeleton(data: bytes):
    """(tree, records, storages) from a saved skeleton; SkeletonRefused (a ValueError) when it is not one this
    code wrote: it does not parse, names a global safe_pickle does not admit, or holds records that do not
    fit their storages. Nothing of it runs as code."""
    try:
        fmt, tree, records, storages = safe_pickle.loads(data)
    except safe_pickle.RefusedGlobal as e:
        raise SkeletonRefused("the checkpoint's structure was refused: %s" % e) from e
    except Exception as e:  # noqa: BLE001
        raise SkeletonRefused("the checkpoint's structure cannot be read: %s" % e) from e
    if fmt != FORMAT:
        raise SkeletonRefused("the checkpoint's structure has format %r; this shoal reads %d" % (fmt, FORMAT))
    if not (isinstance(records, list) and isinstance(storages, list)
            and all(isinstance(r, TensorRecord) for r in records)
            and all(isinstance(s, StorageRecord) for s in storages)):
        raise SkeletonRefused("the checkpoint's structure is malformed (its records are not shoal.torch's)")
    for st in storages:
        if not (isinstance(st.nbytes, int) and st.nbytes >= 0 and st.device in ("cpu", "cuda")):
            raise SkeletonRefused("the checkpoint's structure is malformed: a storage record is out of bounds")
    for r in records:
        if not _record_fits(r, storages):
            raise SkeletonRefused("the checkpoint's structure is malformed: the tensor record of %s does not fit "
                                  "its storage" % (path_text(r.path) if isinstance(r.path, tuple) else "?"))
    return tree, records, storages


def _record_fits(r: TensorRecord, storages: List[StorageRecord]) -> bool:
    """Whether a tensor record names a known dtype and lies inside its storage."""
    if not (isinstance(r.storage, int) and 0 <= r.storage < len(storages) and isinstance(r.dtype, str)
            and isinstance(r.shape, tuple) and isinstance(r.stride, tuple) and len(r.shape) == len(r.stride)
            and all(isinstance(v, int) and v >= 0 for v in r.shape + r.stride)
            and isinstance(r.offset, int) and r.offset >= 0):
        return False
    try:
        size = itemsize(r.dtype)
    except ValueError:
        return False
    if r.shard is not None:
        if not (isinstance(r.shard, tuple) and len(r.shard) == 2 and all(isinstance(x, tuple) for x in r.shard)):
            return False
        global_shape, offsets = r.shard
        if not (len(global_shape) == len(offsets) == len(r.shape)
                and all(isinstance(v, int) and v >= 0 for v in global_shape + offsets)
                and all(o + n <= g for o, n, g in zip(offsets, r.shape, global_shape))):
            return False
    if any(n == 0 for n in r.shape):
        return True
    last = r.offset + sum((n - 1) * st for n, st in zip(r.shape, r.stride))
    return (last + 1) * size <= storages[r.storage].nbytes


def lookup(obj, path: Tuple):
    """The value at `path` inside obj, or None when obj has no such path."""
    for k in path:
        try:
            obj = obj[k]
        except (KeyError, IndexError, TypeError):
            return None
    return obj


def view_of(storage: torch.Tensor, record: TensorRecord) -> torch.Tensor:
    """The tensor of `record` over a uint8 tensor holding its storage's bytes (shared, not copied)."""
    dtype = dtype_of(record.dtype)
    typed = storage.view(dtype) if storage.numel() else torch.empty(0, dtype=dtype)
    return typed.as_strided(record.shape, record.stride, record.offset)


def rebuild(tree, records: List[TensorRecord], tensors: List[torch.Tensor]):
    """The state with each TensorRef replaced by its tensor."""
    if isinstance(tree, TensorRef):
        return tensors[tree.index]
    if isinstance(tree, dict):
        return _rebuild_mapping(tree, [(k, rebuild(v, records, tensors)) for k, v in tree.items()])
    if isinstance(tree, (list, tuple)):
        return _rebuild_sequence(tree, [rebuild(v, records, tensors) for v in tree])
    return tree

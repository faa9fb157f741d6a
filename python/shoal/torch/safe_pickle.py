"""The skeleton of a saved or handed-over state, pickled and read back without ever running code.

A skeleton's bytes come from this host's /dev/shm, from a peer's replica, from the persist directory and,
in Elastic's state hand-over, over the trainers' own Gloo connections: none of them may become code.
loads() reads them with an unpickler that admits only what a training state holds -- containers, numbers,
strings, bytes, torch.Size, torch dtypes, devices, layouts and memory formats, OrderedDict and its kin,
numpy arrays, scalars and dtypes, shoal.torch's own records -- and refuses any other global (a class, a
function such as os.system) with an error naming it. dumps() refuses, at save time, a state that loads()
would refuse later, so a user learns of a custom class when saving, not after a host failed.

A class of the user's own (a dataclass of training progress, a NamedTuple) is admitted once registered:

    shoal.torch.add_safe_globals([MyProgress])

as torch.serialization.add_safe_globals does for torch.load(weights_only=True); what is registered there
is admitted here too. Register only classes whose construction from saved values runs no code you do not
trust.
"""
import builtins
import collections
import io
import pickle
import sys
import types
from typing import Any, Dict, Iterable, Optional, Tuple

import torch

_BUILTINS = {"dict", "list", "tuple", "set", "frozenset", "int", "float", "complex", "bool", "str", "bytes",
             "bytearray", "slice", "range"}
_COLLECTIONS = {"OrderedDict", "defaultdict", "Counter", "deque"}
_NUMPY_RECONSTRUCT = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
                      ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
                      ("numpy.core.numeric", "_frombuffer"), ("numpy._core.numeric", "_frombuffer"),
                      ("numpy", "ndarray"), ("numpy", "dtype")}
_OWN = {"TensorRef", "TensorRecord", "StorageRecord"}
_registered: Dict[Tuple[str, str], Any] = {}


def add_safe_globals(objects: Iterable[Any]) -> None:
    """Admits these classes (or functions) in skeletons shoal.torch loads: register the custom classes a
    training state holds, on every rank, before saving or loading."""
    for obj in objects:
        module, name = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
        if not module or not name:
            raise TypeError("add_safe_globals takes classes or functions, not %r" % (obj,))
        _registered[(module, name)] = obj


def get_safe_globals():
    """What add_safe_globals registered."""
    return list(_registered.values())


def _torch_safe_globals():
    get = getattr(getattr(torch, "serialization", None), "get_safe_globals", None)
    if get is None:
        return []
    out = []
    for g in get():
        out.append(g[0] if isinstance(g, tuple) else g)  # entries may be (obj, "module.name")
    return out


def _resolve(module: str, name: str) -> Optional[Any]:
    """The object a skeleton may name as module.name, or None when it is not admitted."""
    if module == "builtins" and name in _BUILTINS:
        return getattr(builtins, name)
    if module == "collections" and name in _COLLECTIONS:
        return getattr(collections, name)
    if module == "torch":
        if name == "Size":
            return torch.Size
        if name == "device":
            return torch.device
        value = getattr(torch, name, None)
        if isinstance(value, (torch.dtype, torch.layout, torch.memory_format)):
            return value
        return None
    if module == "shoal.torch.state_tree" and name in _OWN:
        from . import state_tree
        return getattr(state_tree, name)
    if (module, name) in _NUMPY_RECONSTRUCT:
        numpy = sys.modules.get("numpy")
        if numpy is None:
            import numpy  # noqa: F811  (a skeleton with numpy values: numpy is needed to read them)
        mod = __import__(module, fromlist=[name])
        return getattr(mod, name)
    if (module, name) in _registered:
        return _registered[(module, name)]
    for g in _torch_safe_globals():
        if getattr(g, "__module__", None) == module and getattr(g, "__qualname__", None) == name:
            return g
    return None


class RefusedGlobal(pickle.UnpicklingError):
    """A skeleton named a class or function shoal.torch does not load."""

    def __init__(self, module: str, name: str):
        self.qualified = "%s.%s" % (module, name)
        super().__init__(
            "the state names %s, which shoal.torch does not load (only containers, numbers, strings, bytes, torch "
            "sizes, dtypes and devices, numpy arrays and what shoal.torch.add_safe_globals registered): if this is "
            "a class of your own training state and you trust it, register it with "
            "shoal.torch.add_safe_globals([...]) on every rank" % self.qualified)


class _RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        obj = _resolve(module, name)
        if obj is None:
            raise RefusedGlobal(module, name)
        return obj

    def persistent_load(self, pid):
        raise pickle.UnpicklingError("the state holds a persistent reference, which shoal.torch does not load")


def loads(data: bytes) -> Any:
    """The object pickled in `data`, refusing every global _resolve does not admit (RefusedGlobal)."""
    return _RestrictedUnpickler(io.BytesIO(data)).load()


def _admitted_object(obj) -> bool:
    """Whether pickling `obj` names only globals that loads() admits."""
    if isinstance(obj, (torch.dtype, torch.layout, torch.memory_format, torch.device, torch.Size)):
        return True
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        if isinstance(obj, (numpy.ndarray, numpy.generic, numpy.dtype)):
            return True
        if isinstance(obj, (types.BuiltinFunctionType, types.FunctionType)) \
                and (getattr(obj, "__module__", None) or "").startswith("numpy") \
                and obj.__name__ in ("_reconstruct", "scalar", "_frombuffer"):
            return True
    if isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType)):  # saved by reference
        module, name = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
        return module is not None and name is not None and _resolve(module, name) is obj
    cls = type(obj)
    return _resolve(cls.__module__, cls.__qualname__) is cls


class NotAdmitted(TypeError):
    """A state holds a global that loads() would refuse (raised by dumps, when saving)."""


class _CheckingPickler(pickle.Pickler):
    def reducer_override(self, obj):
        if not _admitted_object(obj):
            what = obj if isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType)) else type(obj)
            raise NotAdmitted("%s.%s is not admitted in a shoal.torch state: loading it back would refuse it. Keep "
                            "plain values (containers, numbers, strings, tensors, numpy arrays) in the state, or, "
                            "for a class of your own you trust, call shoal.torch.add_safe_globals([%s]) on every "
                            "rank" % (what.__module__, getattr(what, "__qualname__", what.__name__),
                                      getattr(what, "__qualname__", what.__name__)))
        return NotImplemented


def dumps(obj: Any) -> bytes:
    """Pickles `obj`; NotAdmitted (a TypeError) when it names a global that loads() would refuse."""
    buf = io.BytesIO()
    _CheckingPickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return buf.getvalue()

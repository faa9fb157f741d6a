"""The table a shoal DCP checkpoint keeps in every saved rank's version: what DCP needs to rebuild its
Metadata (each item's name, chunk, tensor properties) and where each item's bytes are (saved rank, buffer).

The coordinator builds it from every rank's final save plan (ShoalStorageWriter.prepare_global_plan) and
every rank writes the whole table as the first buffer of its own version, so the metadata survives the loss
of any host: a reader rebuilds DCP's Metadata from whichever version it reads. The table is encoded with
shoal.torch.safe_pickle (plain dicts, tuples, strings and ints) and parsed back
only through its restricted unpickler; parse() then checks every field's type and bound before a reader
uses it.

A record per item, in the order of the saved ranks' plans:
    (fqn, offset or None, index or None, kind, rank, buffer, tensor or None)
kind is "tensor", "shard" or "bytes"; tensor is (dtype, layout, requires_grad, memory_format, pin_memory,
global size, chunk offsets, chunk sizes), the dtype, layout and memory format by their names in torch.
"""
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
from torch.distributed.checkpoint.metadata import (BytesStorageMetadata, ChunkStorageMetadata, Metadata,
                                                   MetadataIndex, TensorProperties, TensorStorageMetadata)
from torch.distributed.checkpoint.planner import SavePlan, WriteItemType

from . import safe_pickle

FORMAT = "shoal.dcp/1"
TABLE_BUFFER = "dcp"
MAX_ITEMS = 1 << 22
MAX_DIMS = 64
_KINDS = {WriteItemType.TENSOR: "tensor", WriteItemType.SHARD: "shard", WriteItemType.BYTE_IO: "bytes"}


class TableRefused(ValueError):
    """A table that is not a shoal DCP table, or one whose fields are out of bounds."""


def item_buffer(k: int) -> str:
    """The buffer of the k-th item of a rank's plan."""
    return "d%d" % k


@dataclass(frozen=True)
class Record:
    fqn: str
    offset: Optional[Tuple[int, ...]]
    index: Optional[int]
    kind: str
    rank: int
    buffer: str
    dtype: Optional[torch.dtype] = None
    layout: Any = None
    requires_grad: bool = False
    memory_format: Any = None
    pin_memory: bool = False
    size: Tuple[int, ...] = ()
    chunk_offsets: Tuple[int, ...] = ()
    chunk_sizes: Tuple[int, ...] = ()

    @property
    def is_tensor(self) -> bool:
        return self.kind != "bytes"

    @property
    def nbytes(self) -> int:
        """A tensor chunk's bytes, row-major (bytes items: unknown until read)."""
        n = 1
        for s in self.chunk_sizes:
            n *= s
        return n * _itemsize(self.dtype)

    def key(self) -> MetadataIndex:
        return MetadataIndex(self.fqn, self.offset, self.index)


def _itemsize(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()


@dataclass
class Table:
    saved_world: int
    records: List[Record]
    planner_data: Any

    def encode(self) -> bytes:
        rows = []
        for r in self.records:
            tensor = None
            if r.is_tensor:
                tensor = (_name(r.dtype), _name(r.layout), r.requires_grad, _name(r.memory_format), r.pin_memory,
                          r.size, r.chunk_offsets, r.chunk_sizes)
            rows.append((r.fqn, r.offset, r.index, r.kind, r.rank, r.buffer, tensor))
        return safe_pickle.dumps({"format": FORMAT, "saved_world": self.saved_world, "items": rows,
                                  "planner_data": self.planner_data})

    def of_rank(self, rank: int) -> List[Record]:
        return [r for r in self.records if r.rank == rank]

    def metadata(self) -> Metadata:
        """DCP's Metadata, as DCP's default planner builds it from the same plans; storage_data maps each
        item's MetadataIndex to its Record."""
        md: Dict[str, Any] = {}
        storage = {}
        for r in self.records:
            if not r.is_tensor:
                md[r.fqn] = BytesStorageMetadata()
            else:
                entry = md.get(r.fqn)
                if entry is None:
                    props = TensorProperties(dtype=r.dtype, layout=r.layout, requires_grad=r.requires_grad,
                                             memory_format=r.memory_format, pin_memory=r.pin_memory)
                    entry = md[r.fqn] = TensorStorageMetadata(properties=props, size=torch.Size(r.size), chunks=[])
                entry.chunks.append(ChunkStorageMetadata(offsets=torch.Size(r.chunk_offsets),
                                                         sizes=torch.Size(r.chunk_sizes)))
            storage[r.key()] = r
        return Metadata(state_dict_metadata=md, planner_data=self.planner_data, storage_data=storage)


def build(plans: Sequence[SavePlan]) -> Table:
    """The table of a save from every rank's plan (after DCP's planner made the global plan), in rank order."""
    records = []
    merged_planner_data: Dict[Any, Any] = {}
    for rank, plan in enumerate(plans):
        for k, item in enumerate(plan.items):
            kind = _KINDS.get(item.type)
            if kind is None:
                raise ValueError("shoal's DCP writer cannot store %s items (%s)" % (item.type, item.index.fqn))
            offset = tuple(int(x) for x in item.index.offset) if item.index.offset is not None else None
            common = dict(fqn=item.index.fqn, offset=offset, index=item.index.index, kind=kind, rank=rank,
                          buffer=item_buffer(k))
            if kind == "bytes":
                records.append(Record(**common))
                continue
            td = item.tensor_data
            if td is None or td.chunk is None:
                raise ValueError("%s: a tensor item without its chunk" % item.index.fqn)
            p = td.properties
            records.append(Record(dtype=p.dtype, layout=p.layout, requires_grad=bool(p.requires_grad),
                                  memory_format=p.memory_format, pin_memory=bool(p.pin_memory),
                                  size=tuple(int(x) for x in td.size),
                                  chunk_offsets=tuple(int(x) for x in td.chunk.offsets),
                                  chunk_sizes=tuple(int(x) for x in td.chunk.sizes), **common))
        if isinstance(plan.planner_data, dict):
            for key, value in plan.planner_data.items():
                merged_planner_data.setdefault(key, value)  # the first rank's wins, as DCP merges them
    any_data = any(isinstance(p.planner_data, dict) for p in plans)
    return Table(saved_world=len(plans), records=records, planner_data=merged_planner_data if any_data else None)


def _name(value) -> str:
    """torch.float32 -> "float32" (a dtype, layout or memory format by its name in the torch module)."""
    return str(value).split(".", 1)[1]


def _named(name, kind):
    """The torch dtype, layout or memory format of that name, or None."""
    if not isinstance(name, str) or not name.isidentifier():
        return None
    value = getattr(torch, name, None)
    return value if isinstance(value, kind) else None


def _ints(value, what: str, dims: bool = True) -> Tuple[int, ...]:
    if not isinstance(value, tuple) or (dims and len(value) > MAX_DIMS) or \
            not all(type(v) is int and v >= 0 for v in value):
        raise TableRefused("%s is not a tuple of non-negative ints" % what)
    return value


def parse(data: bytes, max_rank: Optional[int] = None) -> Table:
    """The table in `data` (the first buffer of a version), every field checked. TableRefused names what is
    wrong; a version not written by ShoalStorageWriter is refused the same way."""
    try:
        doc = safe_pickle.loads(bytes(data))
    except Exception as e:  # noqa: BLE001 (any malformed pickle: refused, never run)
        raise TableRefused("its table does not parse: %s" % e) from e
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise TableRefused("it is not a checkpoint of shoal.torch.dcp.ShoalStorageWriter (no %s table)" % FORMAT)
    world, rows = doc.get("saved_world"), doc.get("items")
    if type(world) is not int or not 1 <= world <= (max_rank or 1 << 20):
        raise TableRefused("its saved world %r is out of bounds" % (world,))
    if not isinstance(rows, list) or len(rows) > MAX_ITEMS:
        raise TableRefused("its item list is not a list of at most %d items" % MAX_ITEMS)
    records, seen = [], set()
    for n, row in enumerate(rows):
        if not isinstance(row, tuple) or len(row) != 7:
            raise TableRefused("item %d is not a 7-tuple" % n)
        fqn, offset, index, kind, rank, buf, tensor = row
        if not isinstance(fqn, str) or not fqn:
            raise TableRefused("item %d has no name" % n)
        what = "item %d (%s)" % (n, fqn)
        if offset is not None:
            _ints(offset, what + "'s offset")
        if index is not None and (type(index) is not int or index < 0):
            raise TableRefused("%s has a bad chunk index %r" % (what, index))
        if kind not in ("tensor", "shard", "bytes"):
            raise TableRefused("%s has an unknown kind %r" % (what, kind))
        if type(rank) is not int or not 0 <= rank < world:
            raise TableRefused("%s names saved rank %r of a world of %d" % (what, rank, world))
        if not isinstance(buf, str) or not buf.startswith("d") or not buf[1:].isdigit() or len(buf) > 12:
            raise TableRefused("%s names buffer %r" % (what, buf))
        if (rank, buf) in seen:
            raise TableRefused("%s reuses buffer %s of rank %d" % (what, buf, rank))
        seen.add((rank, buf))
        common = dict(fqn=fqn, offset=offset, index=index, kind=kind, rank=rank, buffer=buf)
        if kind == "bytes":
            if tensor is not None:
                raise TableRefused("%s is bytes but carries tensor properties" % what)
            records.append(Record(**common))
            continue
        if not isinstance(tensor, tuple) or len(tensor) != 8:
            raise TableRefused("%s lacks its tensor properties" % what)
        dtype, layout, grad, fmt, pin, size, c_off, c_size = tensor
        dtype, layout, fmt = _named(dtype, torch.dtype), _named(layout, torch.layout), _named(fmt, torch.memory_format)
        if dtype is None or layout is None or fmt is None or type(grad) is not bool or type(pin) is not bool:
            raise TableRefused("%s has malformed tensor properties" % what)
        _ints(size, what + "'s size")
        _ints(c_off, what + "'s chunk offsets")
        _ints(c_size, what + "'s chunk sizes")
        if not len(size) == len(c_off) == len(c_size) or \
                any(o + s > g for o, s, g in zip(c_off, c_size, size)):
            raise TableRefused("%s: chunk at %s of sizes %s does not fit the tensor's size %s"
                               % (what, list(c_off), list(c_size), list(size)))
        records.append(Record(dtype=dtype, layout=layout, requires_grad=grad, memory_format=fmt, pin_memory=pin,
                              size=size, chunk_offsets=c_off, chunk_sizes=c_size, **common))
    planner_data = doc.get("planner_data")
    if planner_data is not None and not isinstance(planner_data, dict):
        raise TableRefused("its planner data is a %s, not a dict" % type(planner_data).__name__)
    return Table(saved_world=world, records=records, planner_data=planner_data)

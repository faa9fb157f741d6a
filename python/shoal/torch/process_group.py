"""shoal.torch.ProcessGroup: a torch.distributed process group whose collectives run on the communicator
of one committed view (shoal.Communicator: Gloo on CPU tensors, NCCL on CUDA tensors). What torch's own
groups cannot do, this one does: when the view changes, the session aborts the communicator, and the
collective in flight fails within milliseconds -- out of DDP's backward pass or FSDP's all-gather as a
RuntimeError, on every rank -- instead of waiting for a timeout.

Collectives are asynchronous: each returns a Work at once and runs on the communicator's own thread, in
the order the ranks issue them, so DDP overlaps its bucket all-reduces with the backward pass. An all-reduce
works in its tensor itself, as torch's own backends do: one that fails leaves the tensor undefined (the
step it belonged to is discarded); the other collectives write their outputs only once they succeeded. A CUDA
tensor's collective starts on the device after the work queued on torch's current stream (an event, no
device-wide sync), and its Work completes once the collective has finished on the device.

It serves what DDP and FSDP2 (fully_shard) call on torch 1.13 through 2.x: all_reduce (also coalesced),
broadcast, reduce, all_gather (list, into one tensor under every name torch has used, coalesced),
reduce_scatter (list, from one tensor, coalesced; SUM, AVG, MIN, MAX), all_to_all (even splits), gather,
scatter, send/recv and barrier. PREMUL_SUM (FSDP2 with a gradient divide factor) is refused with what
to do instead. Registered as the backend "shoal" (shoal.torch.init_process_group and shoal.torch.Elastic
build the group of every view).
"""
import datetime
import inspect
import threading
from typing import Callable, List, Optional

import torch
import torch.distributed as dist
from torch.futures import Future

import shoal

BACKEND = "shoal"

# The element types the communicator reduces; others are widened for the reduction (and written back).
_DTYPES = {torch.float32: "float32", torch.float64: "float64", torch.int32: "int32", torch.int64: "int64",
           torch.float16: "float16", torch.bfloat16: "bfloat16"}
_WIDEN_ON_GLOO = {torch.float16: torch.float32, torch.bfloat16: torch.float32}
_WIDEN_INTEGERS = (torch.uint8, torch.int8, torch.int16)
_PREMUL_SUM = getattr(dist.ReduceOp, "PREMUL_SUM", None)
# torch 2.x hands a Python Work's get_future() to C++ consumers (DDP's reducer); torch 1.13 does not (DDP
# would wait forever), so there the Work stays torch's wrapper of the future, whose wait() cannot raise.
_PYTHON_WORK = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 0)
_work_from_future = torch._C._distributed_c10d._create_work_from_future


def _op_name(op) -> str:
    for name, value in (("sum", dist.ReduceOp.SUM), ("min", dist.ReduceOp.MIN), ("max", dist.ReduceOp.MAX)):
        if op == value:
            return name
    if hasattr(dist.ReduceOp, "AVG") and op == dist.ReduceOp.AVG:
        return "avg"
    if _PREMUL_SUM is not None and op == _PREMUL_SUM:
        raise RuntimeError(
            "the shoal backend has no PREMUL_SUM (FSDP2 sends it when a gradient divide factor is set): call "
            "model.set_force_sum_reduction_for_comms(True) on the fully_shard module, or leave the divide "
            "factor unset (FSDP2 then reduces with AVG)")
    raise RuntimeError("the shoal backend reduces with SUM, AVG, MIN or MAX, not %s" % op)


def _stream(t: torch.Tensor) -> Optional[int]:
    return torch.cuda.current_stream(t.device).cuda_stream if t.is_cuda else None


class _Failed:
    """What a failed collective's outcome holds until _unwrap raises it."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException):
        self.error = error


def _cuda_devices(result) -> List[torch.device]:
    """The CUDA devices of the tensors in a collective's result (tensors, lists of them, lists of lists)."""
    found = []
    for t in _tensors(result):
        if t.is_cuda and t.device not in found:
            found.append(t.device)
    return found


def _unwrap(outcome: Future):
    value = outcome.value()
    if isinstance(value, _Failed):
        raise value.error
    return value


class _Work(dist.Work):
    """The torch Work of one collective. It raises the collective's failure from wait(), as torch's own
    backends do: torch's wrapper of a future (_create_work_from_future) returns from wait() even when the
    future failed, so a synchronous dist.broadcast or dist.all_reduce would return as if it succeeded, its
    tensor never written (or, for an all-reduce, half reduced). Its future fails with the same error, for
    consumers that chain on it (DDP's reducer, FSDP2)."""

    def __init__(self, outcome: Future, fut: Future):
        super().__init__()
        self._outcome = outcome  # never fails: holds the result, or _Failed
        self._fut = fut          # outcome.then(_unwrap): fails where the collective failed
        self._settled = threading.Event()
        outcome.add_done_callback(lambda _: self._settled.set())

    def wait(self, timeout=None) -> bool:
        seconds = _seconds(timeout)
        if seconds is not None and not self._settled.wait(seconds):
            raise RuntimeError("shoal collective: not complete within %.3f s of the wait's timeout" % seconds)
        value = self._outcome.wait()
        if isinstance(value, _Failed):
            raise value.error
        self._fut.wait()  # a CUDA result: the caller's current streams wait for the collective's devices
        return True

    def is_completed(self) -> bool:
        return self._fut.done()

    def is_success(self) -> bool:
        return self._fut.done() and not isinstance(self._outcome.value(), _Failed)

    def exception(self):
        value = self._outcome.value() if self._outcome.done() else None
        return value.error if isinstance(value, _Failed) else None

    def get_future(self) -> Future:
        return self._fut

    def result(self):
        self.wait()
        return _tensors(self._outcome.value())

    def synchronize(self) -> None:
        self.wait()


def _seconds(timeout) -> Optional[float]:
    """A wait's timeout as torch passes it (a timedelta, or milliseconds; zero or none: no limit)."""
    if timeout is None:
        return None
    seconds = timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else float(timeout) / 1000.0
    return seconds if seconds > 0 else None


def _tensors(result) -> List[torch.Tensor]:
    """The tensors of a collective's result (tensors, lists of them, lists of lists), in order."""
    found, stack = [], [result]
    while stack:
        x = stack.pop()
        if isinstance(x, torch.Tensor):
            found.append(x)
        elif isinstance(x, (list, tuple)):
            stack.extend(reversed(x))
    return found


class _Buffer:
    """A tensor as the communicator takes it: contiguous and, for a reduction, of a type it reduces.
    finish() writes a converted copy back into the caller's tensor once the collective is done."""

    __slots__ = ("tensor", "work")

    def __init__(self, tensor: torch.Tensor, work: torch.Tensor):
        self.tensor = tensor
        self.work = work

    @property
    def address(self) -> int:
        return self.work.data_ptr()

    @property
    def nbytes(self) -> int:
        return self.work.numel() * self.work.element_size()

    def finish(self) -> None:
        if self.work is not self.tensor:
            self.tensor.copy_(self.work)


class ProcessGroup(dist.ProcessGroup):
    """A process group over one shoal.Communicator; its rank and size are the communicator's."""

    def __init__(self, comm: "shoal.Communicator"):
        super().__init__(comm.rank, comm.world_size)
        self.comm = comm
        self._group_name = "shoal-epoch-%d" % comm.epoch
        self._group_desc = "shoal"
        self.last_error: Optional[BaseException] = None  # what failed the last failed collective

    # ---- identity (torch 2.x asks a Python group for these) ----

    def getBackendName(self) -> str:
        return BACKEND

    def getGroupName(self) -> str:
        return self._group_name

    def setGroupName(self, name: str) -> None:
        self._group_name = name

    def getGroupDesc(self) -> str:
        return self._group_desc

    def setGroupDesc(self, desc: str) -> None:
        self._group_desc = desc

    if not hasattr(dist.ProcessGroup, "group_name"):  # torch 1.13: no such property; 2.x asks getGroupName()
        group_name = property(getGroupName)

    def shutdown(self) -> None:  # destroy_process_group: the session owns the communicator
        pass

    def __repr__(self) -> str:
        return "shoal.torch.ProcessGroup(epoch=%d, rank=%d, size=%d, backend=%s)" % (
            self.comm.epoch, self.comm.rank, self.comm.world_size, self.comm.backend)

    # ---- preparing tensors ----

    def _check(self, t: torch.Tensor, what: str) -> None:
        if self.comm.aborted:
            err = shoal.ViewChanged("the shoal process group of epoch %d belongs to a view that changed: build "
                                    "the next one (shoal.torch.init_process_group() again; shoal.torch.Elastic "
                                    "does it for you)" % self.comm.epoch)
            err.epoch = self.comm.epoch
            raise err
        if not isinstance(t, torch.Tensor):
            raise TypeError("the shoal backend's %s takes tensors, not %s" % (what, type(t).__name__))
        backend = self.comm.backend
        if backend == "gloo" and t.device.type != "cpu":
            raise RuntimeError("the shoal group of this view runs on gloo (CPU tensors), but %s got a tensor on %s: "
                               "move it to the CPU, or start the session with backend='nccl'" % (what, t.device))
        if backend == "nccl" and t.device.type not in ("cuda", "cpu"):
            raise RuntimeError("the shoal group of this view runs on nccl, but %s got a tensor on %s" % (what, t.device))

    def _bytes(self, t: torch.Tensor, what: str) -> _Buffer:
        """For operations that move bytes (broadcast, gathers, all_to_all, send/recv): any dtype."""
        self._check(t, what)
        return _Buffer(t, t if t.is_contiguous() else t.contiguous())

    def _reducible(self, t: torch.Tensor, what: str) -> _Buffer:
        self._check(t, what)
        work = t
        if self.comm.backend == "gloo" and t.dtype in _WIDEN_ON_GLOO:  # Gloo reduces these as float32 here
            work = t.to(_WIDEN_ON_GLOO[t.dtype])
        elif t.dtype in _WIDEN_INTEGERS:
            work = t.to(torch.int64)
        elif t.dtype not in _DTYPES:
            raise RuntimeError("the shoal backend cannot reduce %s tensors (%s): use a float or integer type"
                               % (t.dtype, what))
        if not work.is_contiguous():
            work = work.contiguous()
        return _Buffer(t, work)

    def _empty_like_block(self, t: torch.Tensor, blocks: int) -> torch.Tensor:
        return torch.empty(blocks * t.numel(), dtype=t.dtype, device=t.device)

    # ---- completion: shoal Works -> one torch Work ----

    def _complete(self, works: List["shoal.Work"], result, finish: Optional[Callable[[], None]] = None):
        # The torch Work's future is a then() of `outcome`: a callback that raises marks it failed the way
        # C++ sees a failed future (Future.set_exception would only set a Python exception as its *value*,
        # which DDP's reducer, a C++ consumer, would take for a result).
        devices = _cuda_devices(result)
        outcome = Future(devices=devices) if devices else Future()  # a CUDA result needs its devices named
        fut = outcome.then(_unwrap)
        state = {"left": len(works), "error": None}
        lock = threading.Lock()

        def settle():
            error = state["error"]
            if error is None and finish is not None:
                try:
                    finish()
                except BaseException as e:  # noqa: BLE001 (the Work carries it)
                    error = e
            if error is not None:
                self.last_error = error
                outcome.set_result(_Failed(error))
            else:
                outcome.set_result(result)

        def done(error):
            with lock:
                if error is not None and state["error"] is None:
                    state["error"] = error
                state["left"] -= 1
                last = state["left"] == 0
            if last:
                settle()

        if not works:
            settle()
        for w in works:
            w.on_done(done)
        return _Work(outcome, fut) if _PYTHON_WORK else _work_from_future(fut)

    def _finish_all(self, buffers: List[_Buffer], then: Optional[Callable[[], None]] = None):
        # The closure also keeps every buffer alive until the collective is done: the communicator's thread
        # reads and writes them by address.
        copies = [b for b in buffers if b.work is not b.tensor]

        def finish():
            if not copies and then is None:
                return  # the collective wrote the caller's tensors themselves
            for b in copies:
                b.finish()
            if then is not None:
                then()
            # Copies on CUDA tensors ran on this thread's stream: done before the Work completes.
            for device in {b.tensor.device for b in buffers if b.tensor.is_cuda}:
                torch.cuda.current_stream(device).synchronize()
        return finish

    # ---- all-reduce, reduce, broadcast, barrier ----

    def allreduce(self, tensors, opts=None):
        op = _op_name(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        bufs = [self._reducible(t, "all_reduce") for t in tensors]
        # In place (no safety copy on Gloo): a failed all-reduce fails its step, whose buffers are discarded.
        works = [self.comm.allreduce_async(b.address, b.work.numel(), _DTYPES[b.work.dtype], op, _stream(b.work),
                                           b.work) for b in bufs]
        return self._complete(works, tensors, self._finish_all(bufs))

    def allreduce_coalesced(self, tensors, opts=None):
        return self.allreduce(tensors, opts)

    def reduce(self, tensors, opts):  # every rank computes the result; only the root's is promised
        return self.allreduce(tensors, opts)

    def broadcast(self, tensors, opts):
        root = opts.rootRank
        bufs = [self._bytes(t, "broadcast") for t in tensors]
        works = [self.comm.broadcast_async(b.address, b.nbytes, root, _stream(b.work)) for b in bufs]
        return self._complete(works, tensors, self._finish_all(bufs))

    def barrier(self, opts=None):
        if self.comm.aborted:
            self._check(torch.empty(0), "barrier")
        return self._complete([self.comm.barrier_async()], [])

    # ---- all-gather ----

    def _gather_into(self, output: torch.Tensor, input: torch.Tensor, what: str):
        """One all-gather of `input` into the flat, contiguous `output` (world x input); (work, buffers)."""
        src = self._bytes(input, what)
        self._check(output, what)
        if output.numel() != input.numel() * self.size():
            raise ValueError("%s: the output holds %d elements, not world size %d x %d"
                             % (what, output.numel(), self.size(), input.numel()))
        if output.dtype != input.dtype:
            raise ValueError("%s: the output is %s, the input %s" % (what, output.dtype, input.dtype))
        dst = self._bytes(output, what)
        work = self.comm.allgather_async(src.address, dst.address, src.nbytes, _stream(src.work))
        return work, [src, dst]

    def allgather(self, output_tensors, input_tensors, opts=None):
        works, keep, copies = [], [], []
        for outs, t in zip(output_tensors, input_tensors):
            flat = self._empty_like_block(t, self.size())
            work, bufs = self._gather_into(flat, t, "all_gather")
            works.append(work)
            keep += bufs
            copies.append((outs, flat, t.numel()))

        def scatter_back():
            for outs, flat, n in copies:
                for i, o in enumerate(outs):
                    o.copy_(flat[i * n:(i + 1) * n].view_as(o))
        return self._complete(works, output_tensors, self._finish_all(keep, scatter_back))

    def _allgather_base(self, output, input, opts=None):
        work, bufs = self._gather_into(output, input, "all_gather_into_tensor")
        return self._complete([work], [output], self._finish_all(bufs))

    all_gather_single = _allgather_base  # torch 2.x's name for the same call

    def allgather_into_tensor_coalesced(self, outputs, inputs, opts=None):
        works, keep = [], []
        for o, i in zip(outputs, inputs):
            work, bufs = self._gather_into(o, i, "all_gather_into_tensor (coalesced)")
            works.append(work)
            keep += bufs
        return self._complete(works, outputs, self._finish_all(keep))

    all_gather_single_coalesced = allgather_into_tensor_coalesced

    def allgather_coalesced(self, output_lists, input_list, opts=None):
        return self.allgather(output_lists, input_list, opts)

    # ---- reduce-scatter ----

    def _scatter_reduced(self, output: torch.Tensor, input: torch.Tensor, op: str, what: str):
        if input.numel() != output.numel() * self.size():
            raise ValueError("%s: the input holds %d elements, not world size %d x %d"
                             % (what, input.numel(), self.size(), output.numel()))
        src = self._reducible(input, what)
        dst = self._reducible(output, what)
        if src.work.dtype != dst.work.dtype:
            raise ValueError("%s: the output is %s, the input %s" % (what, output.dtype, input.dtype))
        work = self.comm.reduce_scatter_async(src.address, dst.address, dst.work.numel(), _DTYPES[dst.work.dtype], op,
                                              _stream(src.work))
        return work, [src, dst]

    def _reduce_scatter_base(self, output, input, opts=None):
        op = _op_name(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        work, bufs = self._scatter_reduced(output, input, op, "reduce_scatter_tensor")
        return self._complete([work], [output], self._finish_all(bufs))

    reduce_scatter_single = _reduce_scatter_base  # torch 2.x's name for the same call

    def reduce_scatter_tensor_coalesced(self, outputs, inputs, opts=None):
        op = _op_name(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        works, keep = [], []
        for o, i in zip(outputs, inputs):
            work, bufs = self._scatter_reduced(o, i, op, "reduce_scatter_tensor (coalesced)")
            works.append(work)
            keep += bufs
        return self._complete(works, outputs, self._finish_all(keep))

    reduce_scatter_single_coalesced = reduce_scatter_tensor_coalesced

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        op = _op_name(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        works, keep = [], []
        for out, ins in zip(output_tensors, input_tensors):
            if len(ins) != self.size():
                raise ValueError("reduce_scatter: %d inputs for a world of %d" % (len(ins), self.size()))
            flat = torch.cat([t.reshape(-1) for t in ins])
            work, bufs = self._scatter_reduced(out, flat, op, "reduce_scatter")
            works.append(work)
            keep += bufs
        return self._complete(works, output_tensors, self._finish_all(keep))

    # ---- all-to-all, gather, scatter ----

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        for name, splits in (("output", output_split_sizes), ("input", input_split_sizes)):
            if splits and len(set(splits)) > 1:
                raise RuntimeError("the shoal backend's all_to_all_single takes even splits only, not %s splits %s"
                                   % (name, list(splits)))
        if input.numel() != output.numel() or input.numel() % self.size():
            raise ValueError("all_to_all_single: input (%d elements) and output (%d) must be equal and divide by "
                             "the world size %d" % (input.numel(), output.numel(), self.size()))
        src = self._bytes(input, "all_to_all_single")
        dst = self._bytes(output, "all_to_all_single")
        work = self.comm.all_to_all_async(src.address, dst.address, src.nbytes // self.size(), _stream(src.work))
        return self._complete([work], [output], self._finish_all([src, dst]))

    all_to_all_single = alltoall_base

    def alltoall(self, output_tensors, input_tensors, opts=None):
        sizes = {t.numel() for t in list(output_tensors) + list(input_tensors)}
        if len(sizes) > 1 or len(input_tensors) != self.size() or len(output_tensors) != self.size():
            raise RuntimeError("the shoal backend's all_to_all takes one tensor of one size per rank")
        flat_in = torch.cat([t.reshape(-1) for t in input_tensors])
        flat_out = torch.empty_like(flat_in)
        src, dst = self._bytes(flat_in, "all_to_all"), self._bytes(flat_out, "all_to_all")
        work = self.comm.all_to_all_async(src.address, dst.address, src.nbytes // self.size(), _stream(src.work))
        n = input_tensors[0].numel()

        def split_back():
            for i, o in enumerate(output_tensors):
                o.copy_(flat_out[i * n:(i + 1) * n].view_as(o))
        return self._complete([work], output_tensors, self._finish_all([src, dst], split_back))

    def gather(self, output_tensors, input_tensors, opts):
        root = opts.rootRank
        t = input_tensors[0]
        src = self._bytes(t, "gather")
        at_root = self.rank() == root
        flat = self._empty_like_block(t, self.size()) if at_root else None
        work = self.comm.gather_async(src.address, flat.data_ptr() if at_root else 0, src.nbytes, root,
                                      _stream(src.work))
        n = t.numel()

        def split_back():
            if at_root:
                for i, o in enumerate(output_tensors[0]):
                    o.copy_(flat[i * n:(i + 1) * n].view_as(o))
        return self._complete([work], output_tensors, self._finish_all([src], split_back))

    def scatter(self, output_tensors, input_tensors, opts):
        root = opts.rootRank
        out = output_tensors[0]
        dst = self._bytes(out, "scatter")
        at_root = self.rank() == root
        flat = torch.cat([t.reshape(-1) for t in input_tensors[0]]) if at_root else None
        if at_root:
            self._check(flat, "scatter")
        work = self.comm.scatter_async(flat.data_ptr() if at_root else 0, dst.address, dst.nbytes, root,
                                       _stream(dst.work))
        return self._complete([work], output_tensors, self._finish_all([dst] + ([_Buffer(flat, flat)] if at_root else [])))

    # ---- point to point ----

    def send(self, tensors, dst_rank, tag=0):
        bufs = [self._bytes(t, "send") for t in tensors]
        works = [self.comm.send_async(b.address, b.nbytes, dst_rank, tag) for b in bufs]
        return self._complete(works, tensors, self._finish_all(bufs))

    def recv(self, tensors, src_rank, tag=0):
        bufs = [self._bytes(t, "recv") for t in tensors]
        works = [self.comm.recv_async(b.address, b.nbytes, src_rank, tag) for b in bufs]
        return self._complete(works, tensors, self._finish_all(bufs))

    def recv_anysource(self, *args):
        raise RuntimeError("the shoal backend has no recv from any source: name the sending rank")


# ---- the "shoal" backend: init_process_group("shoal") builds a ProcessGroup over the communicator that
# shoal.torch hands it (init_process_group() in this package, Elastic) ----

_building: List["shoal.Communicator"] = []


def _create_group(store, rank, size, timeout):
    if not _building or _building[-1].rank != rank or _building[-1].world_size != size:
        raise RuntimeError("the shoal backend builds its groups through shoal.torch.init_process_group() or "
                           "shoal.torch.Elastic; torch.distributed.init_process_group('shoal') is not for direct use")
    return ProcessGroup(_building[-1])


def build_group(comm: "shoal.Communicator", store, init: Callable):
    """Calls init(BACKEND, store) with the group of `comm` as what the backend creates."""
    _building.append(comm)
    try:
        return init(BACKEND, store)
    finally:
        _building.pop()


def _register() -> None:
    if BACKEND.upper() in dist.Backend._plugins:
        return
    if "devices" in inspect.signature(dist.Backend.register_backend).parameters:
        dist.Backend.register_backend(BACKEND, _create_group, devices=["cpu", "cuda"])
    else:
        dist.Backend.register_backend(BACKEND, _create_group)


_register()

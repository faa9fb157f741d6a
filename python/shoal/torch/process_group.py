"""shoal.torch.ProcessGroup: a torch.distributed process group whose collectives run on the communicator
of one committed view (shoal.Communicator, Gloo underneath). What torch's own ProcessGroupGloo cannot do
(torch 1.13 can abort no collective in flight), this one does: when the view changes, the session aborts
the communicator, and the collective in flight raises shoal.ViewChanged within milliseconds -- out of
DDP's backward pass as a RuntimeError -- instead of waiting for a timeout.

Collectives complete before they return (the Work is already done): DDP overlaps nothing on a CPU
backend, and a synchronous collective is what lets an abort surface in the step that was running.
Registered as the backend "shoal" (shoal.torch.elastic uses it for the default group of each view)."""
import torch
import torch.distributed as dist
from torch.futures import Future

import shoal

_work_from_future = torch._C._distributed_c10d._create_work_from_future

_DTYPES = {torch.float32: "float32", torch.float64: "float64", torch.int32: "int32", torch.int64: "int64",
           torch.float16: "float16", torch.bfloat16: "bfloat16"}


def _op_name(op) -> str:
    for name, value in (("sum", dist.ReduceOp.SUM), ("min", dist.ReduceOp.MIN), ("max", dist.ReduceOp.MAX)):
        if op == value:
            return name
    if hasattr(dist.ReduceOp, "AVG") and op == dist.ReduceOp.AVG:
        return "avg"
    raise RuntimeError("the shoal backend reduces with SUM, AVG, MIN or MAX, not %s" % op)


def _done(result):
    fut = Future()
    fut.set_result(result)
    return _work_from_future(fut)


class ProcessGroup(dist.ProcessGroup):
    """A process group over one shoal.Communicator; its rank and size are the communicator's."""

    def __init__(self, comm: "shoal.Communicator"):
        super().__init__(comm.rank, comm.world_size)
        self.comm = comm

    def getBackendName(self) -> str:
        return "shoal"

    def _allreduce_one(self, t: torch.Tensor, op: str):
        gloo = self.comm.backend == "gloo"
        work = t if t.is_contiguous() else t.contiguous()
        if gloo and work.dtype in (torch.float16, torch.bfloat16):  # Gloo reduces these as float32 here
            wide = work.float()
            self.comm.allreduce_address(wide.data_ptr(), wide.numel(), "float32", op)
            t.copy_(wide)
            return
        dtype = _DTYPES.get(work.dtype)
        if dtype is None:
            raise RuntimeError("the shoal backend cannot reduce %s tensors" % work.dtype)
        self.comm.allreduce_address(work.data_ptr(), work.numel(), dtype, op)
        if work is not t:
            t.copy_(work)

    def allreduce(self, tensors, opts):
        op = _op_name(opts.reduceOp)
        for t in tensors:
            self._allreduce_one(t, op)
        return _done(tensors)

    def allreduce_coalesced(self, tensors, opts):
        return self.allreduce(tensors, opts)

    def reduce(self, tensors, opts):  # every rank gets the result; only the root's is promised
        op = _op_name(opts.reduceOp)
        for t in tensors:
            self._allreduce_one(t, op)
        return _done(tensors)

    def broadcast(self, tensors, opts):
        root = opts.rootRank
        for t in tensors:
            work = t if t.is_contiguous() else t.contiguous()
            self.comm.broadcast_address(work.data_ptr(), work.numel() * work.element_size(), root)
            if work is not t:
                t.copy_(work)
        return _done(tensors)

    def _allgather_into(self, out_flat: torch.Tensor, t: torch.Tensor):
        src = t if t.is_contiguous() else t.contiguous()
        if not out_flat.is_contiguous():
            raise RuntimeError("the shoal backend's allgather needs a contiguous output")
        self.comm.allgather_address(src.data_ptr(), out_flat.data_ptr(), src.numel() * src.element_size())

    def allgather(self, output_tensors, input_tensors, opts):
        for outs, t in zip(output_tensors, input_tensors):
            flat = torch.empty(self.size() * t.numel(), dtype=t.dtype)
            self._allgather_into(flat, t)
            for i, o in enumerate(outs):
                o.copy_(flat[i * t.numel():(i + 1) * t.numel()].view_as(o))
        return _done(output_tensors)

    def _allgather_base(self, output, input, opts):
        self._allgather_into(output, input)
        return _done([output])

    def barrier(self, opts):
        self.comm.barrier()
        return _done([])

    def _unsupported(self, what):
        raise RuntimeError("the shoal backend has no %s; it serves data-parallel training (allreduce, broadcast, "
                           "allgather, barrier)" % what)

    def gather(self, *args):
        self._unsupported("gather")

    def scatter(self, *args):
        self._unsupported("scatter")

    def reduce_scatter(self, *args):
        self._unsupported("reduce_scatter")

    def alltoall(self, *args):
        self._unsupported("alltoall")

    def alltoall_base(self, *args):
        self._unsupported("alltoall_base")

    def send(self, *args):
        self._unsupported("send")

    def recv(self, *args):
        self._unsupported("recv")
